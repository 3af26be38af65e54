"""A batch RayJob: ``pulumi up`` runs it and returns when it is Complete. Changing the
entrypoint (or anything in the spec) is a new run under a new name; the cluster is
deleted when the job ends, the RayJob (with its status) stays until ``pulumi destroy``."""

import pulumi

from pulumi_ray import RayJob

config = pulumi.Config()


def container(name: str) -> dict[str, object]:
    amounts = {"cpu": "1", "memory": "2Gi"}
    return {
        "name": name,
        "image": "rayproject/ray:2.52.0",
        "resources": {"requests": amounts, "limits": amounts},
    }


job = RayJob(
    "batch",
    namespace=config.get("namespace") or "default",
    timeout=config.get("timeout") or "30m",
    entrypoint=config.get("entrypoint")
    or 'python -c "import ray; ray.init(); print(ray.cluster_resources())"',
    runtime_env_yaml="pip:\n  - requests==2.32.3\n",
    active_deadline_seconds=3600,
    submitter_config={"backoff_limit": 2},
    # Free the cluster, keep the RayJob: DeleteSelf would make the next refresh re-run it.
    deletion_strategy={
        "deletion_rules": [
            {
                "policy": "DeleteCluster",
                "condition": {"job_status": "SUCCEEDED", "ttl_seconds": 60},
            },
            {"policy": "DeleteCluster", "condition": {"job_status": "FAILED", "ttl_seconds": 600}},
        ]
    },
    ray_cluster_spec={
        "ray_version": "2.52.0",
        "head_group_spec": {"template": {"spec": {"containers": [container("ray-head")]}}},
        "worker_group_specs": [
            {
                "group_name": "small",
                "replicas": 1,
                "min_replicas": 1,
                "max_replicas": 2,
                "template": {"spec": {"containers": [container("ray-worker")]}},
            }
        ],
    },
)

pulumi.export("jobName", job.name)
pulumi.export("dashboardUrl", job.dashboard_url)
