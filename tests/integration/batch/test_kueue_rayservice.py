"""Kueue admits RayServices one at a time when its ClusterQueue's quota fits one.

Kueue v0.17.0 queues a RayService as a job of its own (``ray.io/rayservice``): its
webhook sets ``spec.rayClusterConfig.suspend`` at creation, its job controller admits by
setting it back to false, and it counts the RayService active while its ``Ready``
condition is True. The RayService's cluster is made while the RayService is still
suspended, so it starts suspended; once admitted, that cluster must run.
ray-project/kuberay#4686 is the case where it never does: KubeRay v1.7.0 copies the
suspend onto a cluster only when it creates it, so the cluster of an admitted RayService
stays suspended, without a head pod, for good. Our operator lifts the suspend when the
RayService is admitted (``docs/conformance.md``, Kueue).
"""

from __future__ import annotations

import time
from typing import Any

from hack.kueue.run import QUEUE_NAME_LABEL
from hack.localcluster import LocalCluster
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.kinds import POD, RAY_CLUSTER, RAY_SERVICE
from tests.integration.batch.conftest import (
    apply_quota,
    create_in_order,
    delete_quota,
    workload_owners,
)
from tests.integration.rayservice.conftest import (  # noqa: F401 (fixtures)
    ClusterHosts,
    ServeHead,
    condition,
    rayservice,
    serve_head,
    service_status,
)
from tests.operatorprocess import OperatorProcess
from tests.waiting import wait_for

PODSET_LABEL = "kueue.x-k8s.io/podset"
"""Put on the pod templates by Kueue's admission (with the flavor's node selector and
tolerations): an admitted RayService's pods must carry it."""


def queued_service(name: str, namespace: str, head: ServeHead) -> dict[str, Any]:
    """A RayService (a head and one worker, 1 CPU / 1 Gi each) on the LocalQueue
    ``queue``, without ``rayStartParams``."""
    manifest = rayservice(name, namespace, head)
    manifest["metadata"]["labels"] = {QUEUE_NAME_LABEL: "queue"}
    return manifest


def nested_suspend(kube: KubeClient, namespace: str, name: str) -> bool:
    found = kube.get(RAY_SERVICE, name, namespace)
    return bool(found["spec"]["rayClusterConfig"].get("suspend"))


def clusters_of(kube: KubeClient, namespace: str, name: str) -> dict[str, bool]:
    """The RayService's clusters: name -> ``spec.suspend``."""
    return {
        c["metadata"]["name"]: bool(c["spec"].get("suspend"))
        for c in kube.list(RAY_CLUSTER, namespace)["items"]
        if (c["metadata"].get("labels") or {}).get("ray.io/originated-from-cr-name") == name
    }


def service_ready(kube: KubeClient, namespace: str, name: str) -> bool:
    status = service_status(kube, namespace, name)
    return condition(status, "Ready").get("status") == "True"


def live_pod_clusters(kube: KubeClient, namespace: str) -> set[str]:
    return {
        str(p["metadata"]["labels"].get("ray.io/cluster"))
        for p in kube.list(POD, namespace)["items"]
        if not p["metadata"].get("deletionTimestamp")
    }


def test_second_rayservice_waits_and_an_admitted_ones_cluster_runs(
    ray_crds: LocalCluster,
    kueue: object,
    gc_knows_workloads: None,
    kube: KubeClient,
    queued_namespace: str,
    serve_head: ServeHead,  # noqa: F811
) -> None:
    namespace = queued_namespace
    apply_quota(ray_crds, namespace, cpu="2500m", memory="2560Mi")
    try:
        with ClusterHosts(kube, namespace), OperatorProcess(ray_crds.kubeconfig, namespace):
            created = time.monotonic()
            create_in_order(
                kube, ray_crds, namespace,
                queued_service("first", namespace, serve_head),
                queued_service("second", namespace, serve_head),
            )  # fmt: skip
            wait_for(
                "the first RayService admitted",
                lambda: not nested_suspend(kube, namespace, "first"),
                60, 0.05, explain=lambda: workload_owners(ray_crds, namespace),
            )  # fmt: skip
            admitted = time.monotonic()
            wait_for(
                "the first RayService Ready (its cluster unsuspended, kuberay#4686)",
                lambda: service_ready(kube, namespace, "first"),
                120, 0.1,
                explain=lambda: (clusters_of(kube, namespace, "first"),
                                 service_status(kube, namespace, "first")),
            )  # fmt: skip
            ready = time.monotonic()
            first_clusters = clusters_of(kube, namespace, "first")

            time.sleep(2)  # the second would have pods by now if it were let through
            second_suspended = nested_suspend(kube, namespace, "second")
            second_clusters = clusters_of(kube, namespace, "second")
            while_first = live_pod_clusters(kube, namespace)
            queued = workload_owners(ray_crds, namespace)

            deleted = time.monotonic()
            kube.delete(RAY_SERVICE, "first", namespace)
            wait_for(
                "the second RayService admitted",
                lambda: not nested_suspend(kube, namespace, "second"), 90, 0.05,
                explain=lambda: workload_owners(ray_crds, namespace),
            )  # fmt: skip
            second_admitted = time.monotonic()
            wait_for(
                "the second RayService Ready",
                lambda: service_ready(kube, namespace, "second"), 120, 0.1,
                explain=lambda: (clusters_of(kube, namespace, "second"),
                                 service_status(kube, namespace, "second")),
            )  # fmt: skip
            second_ready = time.monotonic()
            second_after = clusters_of(kube, namespace, "second")
            second_pods = {
                p["metadata"]["name"]: (p["metadata"].get("labels") or {}).get(PODSET_LABEL)
                for p in kube.list(POD, namespace)["items"]
                if not p["metadata"].get("deletionTimestamp")
                and p["metadata"]["labels"].get("ray.io/cluster") in second_after
            }
    finally:
        delete_quota(ray_crds, namespace)
    print(
        f"\nKueue RayService: created -> first admitted {admitted - created:.2f} s; "
        f"admitted -> Ready {ready - admitted:.2f} s; first deleted -> second admitted "
        f"{second_admitted - deleted:.2f} s; admitted -> Ready "
        f"{second_ready - second_admitted:.2f} s"
    )
    assert list(first_clusters.values()) == [False], first_clusters
    assert second_suspended
    assert queued["first"].get("Admitted") == "True", queued
    assert queued["second"].get("Admitted") != "True", queued
    # The waiting one's cluster exists suspended (KubeRay makes it at once), without pods.
    assert list(second_clusters.values()) == [True], second_clusters
    assert while_first == set(first_clusters), while_first
    # One cluster, the one made while waiting, running what Kueue admitted: not a second
    # beside it because admission changed the spec.
    assert list(second_after) == list(second_clusters), (second_clusters, second_after)
    assert list(second_after.values()) == [False], second_after
    assert sorted(second_pods.values()) == ["head", "small"], second_pods
