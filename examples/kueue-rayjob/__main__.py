"""A RayJob admitted by Kueue: ``queue_name`` puts it in a LocalQueue, Kueue keeps it
suspended (no cluster, no pods) until the queue's ClusterQueue has quota for it, then
lets it run. ``pulumi up`` returns once the job is Complete or queued (it says which);
``kubectl get rayjob,workload`` follows it from there."""

import pulumi

from pulumi_ray import RayJob

config = pulumi.Config()


def group(name: str, cpu: str) -> dict[str, object]:
    # Kueue admits by the pods' requests: without them the job would fit any quota.
    amounts = {"cpu": cpu, "memory": "4Gi"}
    return {
        # Kueue's webhook needs the field on every group (it writes null otherwise,
        # which the CRD refuses).
        "ray_start_params": {},
        "template": {
            "spec": {
                "containers": [
                    {
                        "name": name,
                        "image": "rayproject/ray:2.52.0",
                        "resources": {"requests": amounts, "limits": amounts},
                    }
                ]
            }
        },
    }


job = RayJob(
    "queued",
    namespace=config.get("namespace") or "team-a",
    queue_name=config.get("queue") or "team-a-queue",
    entrypoint='python -c "import ray; ray.init(); print(ray.cluster_resources())"',
    # Frees the quota as soon as the job ends: Kueue admits the next one then.
    shutdown_after_job_finishes=True,
    ray_cluster_spec={
        "ray_version": "2.52.0",
        "head_group_spec": group("ray-head", "1"),
        "worker_group_specs": [
            {"group_name": "workers", "replicas": 2, **group("ray-worker", "2")},
        ],
    },
)

pulumi.export("jobName", job.name)
pulumi.export("status", job.status)
