"""``spec.managedBy: kueue.x-k8s.io/multikueue``: our operator leaves the object alone.

In a MultiKueue manager cluster, Kueue's MultiKueue controller owns such a RayJob or
RayCluster: it copies it to a worker cluster and mirrors the worker's status back. A Ray
operator running in the manager cluster must therefore do nothing with it: no cluster,
no pod, no Service, no finalizer, no status, no event. Kueue here runs without any
MultiKueue cluster; what is proved is our side, on the real API server, with Kueue's
webhooks in the path. A RayCluster and a RayJob without ``managedBy`` in the same
namespace are the control: they show the operator was reconciling all along.
"""

from __future__ import annotations

from typing import Any

from hack.localcluster import LocalCluster
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.kinds import EVENT, POD, RAY_CLUSTER, RAY_JOB, SERVICE, ResourceKind
from tests.integration.raycluster.conftest import raycluster
from tests.integration.rayjob.conftest import job_status, rayjob
from tests.operatorprocess import OperatorProcess
from tests.rayhead import RayHead
from tests.waiting import wait_for

MULTIKUEUE = "kueue.x-k8s.io/multikueue"
OUR_CONTROLLER = "ray.io/ray-operator"


def untouched(kube: KubeClient, kind: ResourceKind, namespace: str, name: str) -> dict[str, Any]:
    """What our operator would have written on the object: finalizers and status."""
    found = kube.get(kind, name, namespace)
    return {
        "finalizers": found["metadata"].get("finalizers") or [],
        "status": found.get("status") or {},
    }


def made_for(kube: KubeClient, namespace: str, name: str) -> list[str]:
    """Pods, Services and RayClusters that name ``name`` as their cluster or origin."""
    found = []
    for kind in (POD, SERVICE, RAY_CLUSTER):
        for item in kube.list(kind, namespace)["items"]:
            labels = item["metadata"].get("labels") or {}
            owners = {o.get("name") for o in item["metadata"].get("ownerReferences") or ()}
            if name in owners or name in (
                labels.get("ray.io/cluster"),
                labels.get("ray.io/originated-from-cr-name"),
            ):
                found.append(f"{kind.kind}/{item['metadata']['name']}")
    return found


def our_events(kube: KubeClient, namespace: str, name: str) -> list[str]:
    """Events about ``name`` that our operator reported (Kueue reports its own)."""
    return [
        f"{e.get('reason')}: {e.get('note')}"
        for e in kube.list(EVENT, namespace)["items"]
        if (e.get("regarding") or {}).get("name") == name
        and e.get("reportingController") == OUR_CONTROLLER
    ]


def test_objects_managed_by_multikueue_are_left_alone(
    ray_crds: LocalCluster,
    kueue: object,
    kube: KubeClient,
    queued_namespace: str,
    ray_head: RayHead,
) -> None:
    namespace = queued_namespace
    cluster = raycluster("mk-cluster", namespace, workers=1, managedBy=MULTIKUEUE)
    job = rayjob("mk-job", namespace, ray_head, shutdownAfterJobFinishes=True)
    job["spec"]["managedBy"] = MULTIKUEUE
    with OperatorProcess(ray_crds.kubeconfig, namespace):
        kube.create(cluster)
        kube.create(job)
        # The controls, created after: once they have been reconciled, the operator has
        # had its chance at the managed ones (one work queue per kind, in order).
        kube.create(raycluster("control", namespace, workers=1))
        kube.create(rayjob("control-job", namespace, ray_head, suspend=True,
                           shutdownAfterJobFinishes=True))  # fmt: skip
        wait_for(
            "the control RayCluster's pods",
            lambda: len(made_for(kube, namespace, "control")) >= 3, 60,
        )  # fmt: skip
        wait_for(
            "the control RayJob Suspended",
            lambda: job_status(kube, namespace, "control-job").get("jobDeploymentStatus")
            == "Suspended", 60,
        )  # fmt: skip
        states = {
            "mk-cluster": untouched(kube, RAY_CLUSTER, namespace, "mk-cluster"),
            "mk-job": untouched(kube, RAY_JOB, namespace, "mk-job"),
        }
        made = {name: made_for(kube, namespace, name) for name in states}
        told = {name: our_events(kube, namespace, name) for name in states}
        control_told = our_events(kube, namespace, "control")

    for name, state in states.items():
        assert state == {"finalizers": [], "status": {}}, (name, state)
        assert made[name] == [], (name, made[name])
        assert told[name] == [], (name, told[name])
    assert control_told, "the control RayCluster got no event: is OUR_CONTROLLER right?"
