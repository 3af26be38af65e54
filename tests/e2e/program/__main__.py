"""The e2e program: every knob comes from stack config so one program serves every test.

Config (all under the project namespace ``pulumi-ray-e2e``):
  kubeconfig         path of the admin kubeconfig of the local control plane
  namespace          Namespace to create (it holds the ConfigMap and the RayCluster)
  crdFiles           JSON list of CRD manifest paths to install
  greeting           the ConfigMap's one data value (the "one-field change" of the tests)
  rayClusterName     name of the RayCluster custom resource
  rayClusterWaitFor  optional ``pulumi.com/waitFor`` annotation value for the RayCluster
"""

from __future__ import annotations

import json

import pulumi
import pulumi_kubernetes as k8s

config = pulumi.Config()
namespace_name = config.require("namespace")
crd_files: list[str] = json.loads(config.require("crdFiles"))
ray_cluster_name = config.require("rayClusterName")
wait_for = config.get("rayClusterWaitFor")

# enable_config_map_mutable: without it the provider replaces a ConfigMap whose data
# changes (to roll the pods that mount it), and the one-field change would be a replace.
provider = k8s.Provider(
    "local-cluster",
    kubeconfig=config.require("kubeconfig"),
    enable_config_map_mutable=True,
)
options = pulumi.ResourceOptions(provider=provider)

namespace = k8s.core.v1.Namespace("namespace", metadata={"name": namespace_name}, opts=options)
config_map = k8s.core.v1.ConfigMap(
    "settings",
    metadata={"name": "settings", "namespace": namespace.metadata["name"]},
    data={"greeting": config.require("greeting")},
    opts=options,
)
crds = k8s.yaml.v2.ConfigGroup("ray-crds", files=crd_files, opts=options)

# (Not named `annotations`: that name is the __future__ feature imported above.)
ray_cluster_annotations: dict[str, str] = {"pulumi.com/waitFor": wait_for} if wait_for else {}
if wait_for:
    # Bounds the wait: a test that never sets the condition fails in minutes, not ten.
    ray_cluster_annotations["pulumi.com/timeoutSeconds"] = "240"
ray_cluster = k8s.apiextensions.CustomResource(
    "raycluster",
    api_version="ray.io/v1",
    kind="RayCluster",
    # An empty `annotations: {}` would diff on every preview (the provider drops it from
    # the state it reads back), so the key is only there when there is something to say.
    metadata={
        "name": ray_cluster_name,
        "namespace": namespace.metadata["name"],
        **({"annotations": ray_cluster_annotations} if ray_cluster_annotations else {}),
    },
    spec={
        "rayVersion": "2.41.0",
        "headGroupSpec": {
            "rayStartParams": {"dashboard-host": "0.0.0.0"},
            "template": {
                "spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.41.0"}]}
            },
        },
    },
    opts=pulumi.ResourceOptions(provider=provider, depends_on=[crds]),
)

pulumi.export("configMapName", config_map.metadata["name"])
