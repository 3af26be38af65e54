"""Ray objects for the policy pack: ``source`` picks yaml/v2 (a manifest file) or our component."""

import pulumi
import pulumi_kubernetes as k8s

from components import RayCluster

config = pulumi.Config()
provider = k8s.Provider("local", kubeconfig=config.require("kubeconfig"))
namespace = config.require("namespace")

if config.require("source") == "yaml":
    k8s.yaml.v2.ConfigFile(
        "manifest",
        file=config.require("manifest"),
        opts=pulumi.ResourceOptions(provider=provider),
    )
else:
    image = config.require("image")
    resources = {"cpu": "1", "memory": "2Gi"}
    container = {"name": "ray", "image": image, "resources": {"limits": resources}}
    RayCluster(
        "policy",
        namespace=namespace,
        ray_version="2.52.0",
        head_group_spec={"template": {"spec": {"containers": [container]}}},
        worker_group_specs=[
            {
                "group_name": "workers",
                "replicas": 1,
                "min_replicas": 0,
                "max_replicas": 2,
                "template": {"spec": {"containers": [{**container, "name": "worker"}]}},
            }
        ],
        opts=pulumi.ResourceOptions(provider=provider),
    )
