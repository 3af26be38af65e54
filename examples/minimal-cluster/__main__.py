"""The smallest useful Ray cluster: a head and one fixed-size worker group."""

import pulumi

from pulumi_ray import RayCluster

config = pulumi.Config()
image = f"rayproject/ray:{config.get('rayVersion') or '2.52.0'}"


def container(name: str, cpu: str, memory: str) -> dict[str, object]:
    resources = {"cpu": cpu, "memory": memory}
    return {"name": name, "image": image, "resources": {"requests": resources, "limits": resources}}


cluster = RayCluster(
    "minimal",
    namespace=config.get("namespace") or "default",
    ray_version=config.get("rayVersion") or "2.52.0",
    head_group_spec={"template": {"spec": {"containers": [container("ray-head", "1", "2Gi")]}}},
    worker_group_specs=[
        {
            "group_name": "workers",
            "replicas": config.get_int("workers") or 1,
            "min_replicas": 0,
            "max_replicas": 5,
            "template": {"spec": {"containers": [container("ray-worker", "1", "2Gi")]}},
        }
    ],
)

pulumi.export("clusterName", cluster.name)
pulumi.export("dashboardUrl", cluster.dashboard_url)
