import pulumi

from pulumi_ray import RayCluster, RayOperator, RayOperatorArgs

ray = {"name": "ray", "image": "rayproject/ray:2.52.1"}
operator = RayOperator("ray-operator", RayOperatorArgs(image=pulumi.Config().get("operatorImage")))
cluster = RayCluster(
    "demo", opts=pulumi.ResourceOptions(depends_on=[operator]),
    namespace="default", ray_version="2.52.1",
    head_group_spec={"template": {"spec": {"containers": [ray]}}},
    worker_group_specs=[{"group_name": "cpu", "replicas": 2, "min_replicas": 0,
                         "max_replicas": 4, "template": {"spec": {"containers": [ray]}}}],
)  # fmt: skip
pulumi.export("dashboard", cluster.dashboard_url)
