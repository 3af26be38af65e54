"""Kueue admits RayClusters one at a time when its ClusterQueue's quota fits one.

A RayCluster never finishes, so its quota comes back when it goes: deleting the first
admits the second. Our operator must keep the waiting one without pods while Kueue holds
it suspended, and report the admitted one Ready (which Kueue counts as active).
"""

from __future__ import annotations

import time
from typing import Any

from hack.kueue.run import QUEUE_NAME_LABEL
from hack.localcluster import LocalCluster
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.kinds import POD, RAY_CLUSTER
from tests.integration.batch.conftest import apply_quota, create_in_order, delete_quota
from tests.integration.raycluster.conftest import raycluster
from tests.operatorprocess import OperatorProcess
from tests.waiting import wait_for


def queued_cluster(name: str, namespace: str) -> dict[str, Any]:
    """A RayCluster (one head of 1 CPU / 1 Gi, no workers) on the LocalQueue ``queue``,
    with no ``rayStartParams`` (``test_kueue_rayjob.queued_job`` says why that matters)."""
    manifest = raycluster(name, namespace, workers=0)
    manifest["metadata"]["labels"] = {QUEUE_NAME_LABEL: "queue"}
    spec = manifest["spec"]
    for group in [spec["headGroupSpec"], *spec["workerGroupSpecs"]]:
        assert "rayStartParams" not in group, group
    return manifest


def state(kube: KubeClient, namespace: str, name: str) -> str:
    return str((kube.get(RAY_CLUSTER, name, namespace).get("status") or {}).get("state", ""))


def suspended(kube: KubeClient, namespace: str, name: str) -> bool:
    return bool(kube.get(RAY_CLUSTER, name, namespace)["spec"].get("suspend"))


def pod_clusters(kube: KubeClient, namespace: str) -> set[str]:
    return {
        str(p["metadata"]["labels"].get("ray.io/cluster"))
        for p in kube.list(POD, namespace)["items"]
        if not p["metadata"].get("deletionTimestamp")
    }


def test_second_raycluster_waits_suspended_until_the_first_is_deleted(
    ray_crds: LocalCluster,
    kueue: object,
    gc_knows_workloads: None,
    kube: KubeClient,
    queued_namespace: str,
) -> None:
    namespace = queued_namespace
    apply_quota(ray_crds, namespace, cpu="1500m", memory="1536Mi")
    try:
        with OperatorProcess(ray_crds.kubeconfig, namespace):
            create_in_order(
                kube, ray_crds, namespace,
                queued_cluster("first", namespace), queued_cluster("second", namespace),
            )  # fmt: skip
            wait_for(
                "the first RayCluster ready", lambda: state(kube, namespace, "first") == "ready",
                60, 0.05,
            )  # fmt: skip
            time.sleep(2)  # the second would have pods by now if it were let through
            second_suspended = suspended(kube, namespace, "second")
            second_state = state(kube, namespace, "second")
            while_first = pod_clusters(kube, namespace)

            deleted = time.monotonic()
            kube.delete(RAY_CLUSTER, "first", namespace)
            wait_for(
                "the second RayCluster admitted",
                lambda: not suspended(kube, namespace, "second"), 60, 0.05,
            )  # fmt: skip
            admitted = time.monotonic()
            wait_for(
                "the second RayCluster ready",
                lambda: state(kube, namespace, "second") == "ready", 60, 0.05,
            )  # fmt: skip
            ready = time.monotonic()
    finally:
        delete_quota(ray_crds, namespace)
    print(
        f"\nKueue RayCluster: first deleted -> second admitted {admitted - deleted:.2f} s; "
        f"admitted -> ready {ready - admitted:.2f} s; second's state while waiting "
        f"{second_state!r}"
    )
    assert second_suspended
    assert while_first == {"first"}, while_first
