"""An autoscaled GPU cluster: the Ray autoscaler owns each group's replicas, so
``pulumi up`` never resets them, and the dashboard gets an Ingress if a host is set."""

import pulumi

from operator_runtime.api import AutoscalerOptions, HeadGroupSpec, RayClusterSpec, WorkerGroupSpec
from pulumi_ray import IngressEdgeArgs, RayCluster

config = pulumi.Config()
image = f"rayproject/ray:{config.get('rayVersion') or '2.52.0'}-gpu"
dashboard_host = config.get("dashboardHost")


def resources(cpu: str, memory: str, gpus: int = 0) -> dict[str, object]:
    amounts: dict[str, object] = {"cpu": cpu, "memory": memory}
    if gpus:
        amounts["nvidia.com/gpu"] = str(gpus)
    return {"requests": amounts, "limits": amounts}


# The typed models work as well as dicts; a mistake fails here, with its field path.
spec = RayClusterSpec(
    ray_version=config.get("rayVersion") or "2.52.0",
    enable_in_tree_autoscaling=True,
    autoscaler_options=AutoscalerOptions(idle_timeout_seconds=120, upscaling_mode="Default"),
    head_group_spec=HeadGroupSpec(
        ray_start_params={"num-gpus": "0"},
        template={
            "spec": {
                "containers": [
                    {"name": "ray-head", "image": image, "resources": resources("4", "16Gi")}
                ]
            }
        },
    ),
    worker_group_specs=[
        WorkerGroupSpec(
            group_name="gpu",
            min_replicas=0,
            max_replicas=config.get_int("maxGpuWorkers") or 4,
            template={
                "spec": {
                    "tolerations": [
                        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
                    ],
                    "containers": [
                        {
                            "name": "ray-worker",
                            "image": image,
                            "resources": resources("8", "32Gi", 1),
                        }
                    ],
                }
            },
        )
    ],
)

cluster = RayCluster(
    "gpu",
    spec=spec,
    namespace=config.get("namespace") or "default",
    dashboard_ingress=IngressEdgeArgs(host=dashboard_host) if dashboard_host else None,
)

pulumi.export("headService", cluster.head_service_name)
pulumi.export("dashboardUrl", cluster.dashboard_url)
