"""A RayService's validation on the real control plane (KubeRay §7): what the CRD carries
(schema bounds, CEL) is refused by the API server itself; every other rule by the
controller, which records a Warning InvalidRayService{Metadata,Spec} event naming the
field and sets Ready False/ValidationFailed, and creates nothing."""

from __future__ import annotations

import copy
import time
from typing import Any

import pytest

from hack.localcluster import LocalCluster
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.errors import Invalid
from operator_runtime.runtime.kinds import RAY_CLUSTER, SERVICE, Object
from tests.integration.raycluster.conftest import container, events
from tests.integration.rayservice.conftest import condition, operator, service_status
from tests.waiting import wait_for

CUO = "spec.upgradeStrategy.clusterUpgradeOptions"
INCREMENTAL_OPTIONS = {"stepSizePercent": 10, "intervalSeconds": 30, "gatewayClassName": "istio"}


def plain_service(name: str, namespace: str, **spec: Any) -> Object:
    """A RayService no test lets run: nothing answers for its clusters."""
    manifest: Object = {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "serveConfigV2": "applications: []\n",
            "rayClusterConfig": {
                "rayVersion": "2.52.1",
                "headGroupSpec": {"template": {"spec": {"containers": [container("ray-head")]}}},
                "workerGroupSpecs": [
                    {
                        "groupName": "small",
                        "replicas": 1,
                        "minReplicas": 0,
                        "maxReplicas": 2,
                        "template": {"spec": {"containers": [container("ray-worker")]}},
                    }
                ],
            },
        },
    }
    for key, value in copy.deepcopy(spec).items():
        if key == "rayClusterConfig":
            manifest["spec"]["rayClusterConfig"].update(value)
        else:
            manifest["spec"][key] = value
    return manifest


def incremental(autoscaling: bool = True, with_options: bool = True, **options: Any) -> Any:
    strategy: dict[str, Any] = {"type": "NewClusterWithIncrementalUpgrade"}
    if with_options:
        strategy["clusterUpgradeOptions"] = {**INCREMENTAL_OPTIONS, **options}
    return {
        "upgradeStrategy": strategy,
        "rayClusterConfig": {"enableInTreeAutoscaling": autoscaling},
    }


# name -> (spec fields, words of the API server's answer)
REFUSED_BY_THE_API_SERVER = {
    "negative-deletion-delay": (
        {"rayClusterDeletionDelaySeconds": -1},
        "spec.rayClusterDeletionDelaySeconds in body should be greater than or equal to 0",
    ),
    "unknown-manager": (
        {"managedBy": "someone-else"},
        "the managedBy field value must be either 'ray.io/kuberay-operator' or "
        "'kueue.x-k8s.io/multikueue'",
    ),
    "cluster-unknown-manager": (
        {"rayClusterConfig": {"managedBy": "someone-else"}},
        "the managedBy field value must be either 'ray.io/kuberay-operator' or "
        "'kueue.x-k8s.io/multikueue'",
    ),
    "no-gateway-class": (
        {"upgradeStrategy": {"type": "NewClusterWithIncrementalUpgrade",
                             "clusterUpgradeOptions": {"stepSizePercent": 10,
                                                       "intervalSeconds": 30}}},
        "gatewayClassName: Required value",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(REFUSED_BY_THE_API_SERVER))
def test_the_api_server_refuses_what_the_crd_forbids(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str, case: str
) -> None:
    spec, words = REFUSED_BY_THE_API_SERVER[case]
    with pytest.raises(Invalid) as refused:
        kube.create(plain_service(case, namespace, **spec))
    assert words in refused.value.message, refused.value.message


def test_the_api_server_keeps_managed_by_as_it_was_created(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str
) -> None:
    created = kube.create(
        plain_service("managed", namespace, managedBy="kueue.x-k8s.io/multikueue")
    )
    created["spec"]["managedBy"] = "ray.io/kuberay-operator"
    with pytest.raises(Invalid) as refused:
        kube.update(created)
    assert "the managedBy field is immutable" in refused.value.message


TOKEN_AUTH = {"authOptions": {"mode": "token", "enableK8sTokenAuth": True}, "rayVersion": "2.55.0"}
HEAD_SERVICE = {"headService": {"metadata": {"name": "fixed"}}}

# name -> (metadata annotations, spec fields, field path, event reason)
REFUSED_BY_THE_CONTROLLER = {
    "s" * 48: ({}, {}, "metadata.name", "InvalidRayServiceMetadata"),
    "9lives": ({}, {}, "metadata.name", "InvalidRayServiceMetadata"),
    "zero-timeout": ({"ray.io/initializing-timeout": "0"}, {},
                     "metadata.annotations[ray.io/initializing-timeout]",
                     "InvalidRayServiceMetadata"),
    "word-timeout": ({"ray.io/initializing-timeout": "soon"}, {},
                     "metadata.annotations[ray.io/initializing-timeout]",
                     "InvalidRayServiceMetadata"),
    "token-auth": ({}, {"rayClusterConfig": TOKEN_AUTH},
                   "spec.rayClusterConfig.authOptions.enableK8sTokenAuth",
                   "InvalidRayServiceSpec"),
    "cluster-spec": ({}, {"rayClusterConfig": {"workerGroupSpecs": [{
        "groupName": "small", "replicas": 1, "minReplicas": 3, "maxReplicas": 1,
        "template": {"spec": {"containers": [container("ray-worker")]}}}]}},
                     "spec.rayClusterConfig.workerGroupSpecs[0].minReplicas",
                     "InvalidRayServiceSpec"),
    "head-service-name": ({}, {"rayClusterConfig": {"headGroupSpec": {
        "template": {"spec": {"containers": [container("ray-head")]}}, **HEAD_SERVICE}}},
                          "spec.rayClusterConfig.headGroupSpec.headService.metadata.name",
                          "InvalidRayServiceSpec"),
    "recreate": ({}, {"upgradeStrategy": {"type": "Recreate"}}, "spec.upgradeStrategy.type",
                 "InvalidRayServiceSpec"),
    "no-autoscaling": ({}, incremental(autoscaling=False),
                       "spec.rayClusterConfig.enableInTreeAutoscaling", "InvalidRayServiceSpec"),
    "no-options": ({}, incremental(with_options=False), CUO, "InvalidRayServiceSpec"),
    "max-surge": ({}, incremental(maxSurgePercent=150), f"{CUO}.maxSurgePercent",
                  "InvalidRayServiceSpec"),
    "step-size": ({}, incremental(stepSizePercent=-1), f"{CUO}.stepSizePercent",
                  "InvalidRayServiceSpec"),
    "step-above-surge": ({}, incremental(maxSurgePercent=20, stepSizePercent=50),
                         f"{CUO}.stepSizePercent", "InvalidRayServiceSpec"),
    "zero-interval": ({}, incremental(intervalSeconds=0), f"{CUO}.intervalSeconds",
                      "InvalidRayServiceSpec"),
    "empty-gateway-class": ({}, incremental(gatewayClassName=""), f"{CUO}.gatewayClassName",
                            "InvalidRayServiceSpec"),
}  # fmt: skip


def test_the_controller_refuses_an_invalid_rayservice(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str
) -> None:
    with operator(ray_crds, namespace) as running:
        for name, (annotations, spec, _, _) in REFUSED_BY_THE_CONTROLLER.items():
            manifest = plain_service(name, namespace, **spec)
            if annotations:
                manifest["metadata"]["annotations"] = annotations
            kube.create(manifest)

        def failed(name: str) -> Any:
            def check() -> dict[str, Any] | None:
                ready = condition(service_status(kube, namespace, name), "Ready")
                return ready if ready.get("reason") == "ValidationFailed" else None

            return check

        refused = {
            name: wait_for(f"{name} ValidationFailed", failed(name), timeout=30)
            for name in REFUSED_BY_THE_CONTROLLER
        }
        warned = {
            name: wait_for(
                f"{reason} for {name}",
                lambda name=name, reason=reason: events(kube, namespace, reason, name),
            )
            for name, (_, _, _, reason) in REFUSED_BY_THE_CONTROLLER.items()
        }
        time.sleep(3)  # an invalid RayService must not move on
        after = {
            name: condition(service_status(kube, namespace, name), "Ready")
            for name in REFUSED_BY_THE_CONTROLLER
        }
        clusters = kube.list(RAY_CLUSTER, namespace)["items"]
        services = kube.list(SERVICE, namespace)["items"]
        log = running.log()
    for name, (_, _, path, _) in REFUSED_BY_THE_CONTROLLER.items():
        ready = refused[name]
        assert ready["status"] == "False", ready
        assert path in ready["message"], (name, ready)
        assert [e["type"] for e in warned[name]] == ["Warning"], warned[name]
        assert path in warned[name][0]["note"], (name, warned[name])
        assert after[name] == ready, f"{name} moved on from ValidationFailed"
    assert clusters == [] and services == [], "an invalid RayService got a cluster or Service"
    assert "Traceback" not in log
