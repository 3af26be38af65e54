"""Ray Serve behind a Gateway.

By default the RayService upgrades incrementally (``NewClusterWithIncrementalUpgrade``):
the operator creates the Gateway and an HTTPRoute whose weights move traffic to a new
cluster step by step. With ``pulumi config set upgradeType NewCluster`` (blue/green) the
component creates its own Gateway + HTTPRoute in front of ``<name>-serve-svc`` instead.
"""

import pulumi

from pulumi_ray import GatewayEdgeArgs, RayService

config = pulumi.Config()
gateway_class = config.get("gatewayClassName") or "istio"
upgrade_type = config.get("upgradeType") or "NewClusterWithIncrementalUpgrade"
incremental = upgrade_type == "NewClusterWithIncrementalUpgrade"

SERVE_CONFIG = """\
applications:
  - name: fruit_app
    import_path: fruit.deployment_graph
    route_prefix: /fruit
    runtime_env:
      working_dir: "https://github.com/ray-project/test_dag/archive/78b4a5da38796123d9f9ffff59bab2792a043e95.zip"
    deployments:
      - name: MangoStand
        autoscaling_config: {min_replicas: 1, max_replicas: 4}
        ray_actor_options: {num_cpus: 0.5}
      - name: FruitMarket
        num_replicas: 1
        ray_actor_options: {num_cpus: 0.5}
"""

ports = [
    {"containerPort": 6379, "name": "gcs-server"},
    {"containerPort": 8265, "name": "dashboard"},
    {"containerPort": 10001, "name": "client"},
    {"containerPort": 8000, "name": "serve"},
]


def container(name: str, **extra: object) -> dict[str, object]:
    amounts = {"cpu": "2", "memory": "4Gi"}
    return {
        "name": name,
        "image": "rayproject/ray:2.52.0",
        "resources": {"requests": amounts, "limits": amounts},
        **extra,
    }


upgrade_strategy: dict[str, object] = {"type": upgrade_type}
if incremental:
    upgrade_strategy["cluster_upgrade_options"] = {
        "gateway_class_name": gateway_class,
        "max_surge_percent": 40,
        "step_size_percent": 20,
        "interval_seconds": 30,
    }

service = RayService(
    "fruit",
    namespace=config.get("namespace") or "default",
    timeout="20m",
    upgrade_strategy=upgrade_strategy,
    serve_config_v2=SERVE_CONFIG,
    ray_cluster_config={
        "ray_version": "2.52.0",
        # Incremental upgrades need the autoscaler; its replicas are never reset by Pulumi.
        "enable_in_tree_autoscaling": True,
        "autoscaler_options": {"version": "v2"},
        "head_group_spec": {
            "ray_start_params": {"num-cpus": "0"},
            "template": {"spec": {"containers": [container("ray-head", ports=ports)]}},
        },
        "worker_group_specs": [
            {
                "group_name": "serve-workers",
                "min_replicas": 1,
                "max_replicas": 6,
                "template": {"spec": {"containers": [container("ray-worker")]}},
            }
        ],
    },
    serve_gateway=None
    if incremental
    else GatewayEdgeArgs(gateway_class_name=gateway_class, hostname=config.get("hostname")),
)

pulumi.export("serveUrl", service.serve_url)
pulumi.export("dashboardUrl", service.dashboard_url)
