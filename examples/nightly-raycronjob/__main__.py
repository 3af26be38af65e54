"""A nightly batch run: the operator creates a RayJob from the template at 02:30 Berlin
time (the operator needs the RayCronJob feature gate). Those RayJobs are the operator's,
not Pulumi's, so they may delete themselves when done."""

import pulumi

from pulumi_ray import RayCronJob

config = pulumi.Config()


def container(name: str, cpu: str, memory: str) -> dict[str, object]:
    amounts = {"cpu": cpu, "memory": memory}
    return {
        "name": name,
        "image": "rayproject/ray:2.52.0",
        "resources": {"requests": amounts, "limits": amounts},
    }


nightly = RayCronJob(
    "nightly",
    namespace=config.get("namespace") or "default",
    schedule=config.get("schedule") or "30 2 * * *",
    time_zone="Europe/Berlin",
    job_template={
        "entrypoint": 'python -c "import ray; ray.init(); print(ray.cluster_resources())"',
        "deletion_strategy": {
            "deletion_rules": [
                {
                    "policy": "DeleteSelf",
                    "condition": {"job_status": "SUCCEEDED", "ttl_seconds": 300},
                },
                {
                    "policy": "DeleteCluster",
                    "condition": {"job_status": "FAILED", "ttl_seconds": 300},
                },
            ]
        },
        "ray_cluster_spec": {
            "ray_version": "2.52.0",
            "head_group_spec": {
                "template": {"spec": {"containers": [container("ray-head", "1", "2Gi")]}}
            },
            "worker_group_specs": [
                {
                    "group_name": "batch",
                    "replicas": 2,
                    "min_replicas": 2,
                    "max_replicas": 2,
                    "template": {"spec": {"containers": [container("ray-worker", "2", "4Gi")]}},
                }
            ],
        },
    },
)

pulumi.export("cronJobName", nightly.name)
