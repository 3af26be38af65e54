"""An autoscaled RayCluster as a platform team writes one: the worker group gives its
bounds and no ``replicas``, which the Ray autoscaler owns."""

import pulumi

from pulumi_ray import RayCluster

config = pulumi.Config()
ray = {
    "name": "ray", "image": config.require("rayImage"), "imagePullPolicy": "IfNotPresent",
    "resources": {"requests": {"cpu": "200m", "memory": "1Gi"},
                  "limits": {"cpu": "1", "memory": "2Gi"}},
}  # fmt: skip
RayCluster(
    "stacked", namespace=config.require("namespace"), ray_version=config.require("rayVersion"),
    enable_in_tree_autoscaling=True,
    autoscaler_options={"version": config.require("autoscalerVersion"),
                        "idle_timeout_seconds": config.require_int("idleTimeoutSeconds"),
                        "resources": {"requests": {"cpu": "100m", "memory": "256Mi"},
                                      "limits": {"cpu": "500m", "memory": "512Mi"}}},
    head_group_spec={"ray_start_params": {"num-cpus": "0"},
                     "template": {"spec": {"containers": [ray]}}},
    worker_group_specs=[{"group_name": "cpu", "min_replicas": 0, "max_replicas": 3,
                         "template": {"spec": {"containers": [ray]}}}],
)  # fmt: skip
