"""Kueue admits RayJobs one at a time when its ClusterQueue's quota fits one cluster.

Kueue's webhook suspends each RayJob at creation; its job controller creates a Workload
for it and unsuspends the one it admits. Our operator must leave a suspended RayJob
without a cluster (status Suspended), and report the admitted one's progress so that
Kueue sees it finish (Complete) and hands the quota to the next.
"""

from __future__ import annotations

import time
from typing import Any

from hack.kueue.run import QUEUE_NAME_LABEL
from hack.localcluster import LocalCluster
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.kinds import POD, RAY_CLUSTER, RAY_JOB
from tests.integration.batch.conftest import (
    apply_quota,
    create_in_order,
    delete_quota,
    workload_owners,
)
from tests.integration.rayjob.conftest import ClusterHosts, describe_job, job_status, rayjob
from tests.operatorprocess import OperatorProcess
from tests.rayhead import RayHead
from tests.waiting import wait_for

SLEEP_5 = 'python -c "import time; time.sleep(5)"'
FINAL = ("Complete", "Failed")


def queued_job(name: str, namespace: str, head: RayHead) -> dict[str, Any]:
    """A RayJob (one head of 1 CPU / 1 Gi, no workers) on the LocalQueue ``queue``, with no
    ``rayStartParams``: Kueue's webhook patches the absent field back as ``null``, which
    our CRD accepts (``operator_runtime.api.raycluster.NULL_FROM_GO_CLIENTS``)."""
    manifest = rayjob(
        name, namespace, head, submissionMode="HTTPMode", entrypoint=SLEEP_5,
        shutdownAfterJobFinishes=True,
    )  # fmt: skip
    manifest["metadata"]["labels"] = {QUEUE_NAME_LABEL: "queue"}
    cluster = manifest["spec"]["rayClusterSpec"]
    for group in [cluster["headGroupSpec"], *cluster["workerGroupSpecs"]]:
        assert "rayStartParams" not in group, group
    return manifest


def suspended(kube: KubeClient, namespace: str, name: str) -> bool:
    return bool(kube.get(RAY_JOB, name, namespace)["spec"].get("suspend"))


def test_second_rayjob_stays_suspended_until_the_first_finishes(
    ray_crds: LocalCluster,
    kueue: object,
    kube: KubeClient,
    queued_namespace: str,
    ray_head: RayHead,
) -> None:
    namespace = queued_namespace
    apply_quota(ray_crds, namespace, cpu="1500m", memory="1536Mi")
    try:
        with (
            ClusterHosts(kube, namespace),
            OperatorProcess(ray_crds.kubeconfig, namespace),
        ):
            created = time.monotonic()
            create_in_order(
                kube, ray_crds, namespace,
                queued_job("first", namespace, ray_head),
                queued_job("second", namespace, ray_head),
            )  # fmt: skip

            wait_for(
                "the first RayJob admitted (unsuspended)",
                lambda: not suspended(kube, namespace, "first"),
                60, 0.05, explain=lambda: workload_owners(ray_crds, namespace),
            )  # fmt: skip
            admitted = time.monotonic()
            wait_for(
                "the first RayJob's cluster ready",
                lambda: (job_status(kube, namespace, "first").get("rayClusterStatus") or {})
                .get("state") == "ready",
                60, 0.05, explain=lambda: describe_job(kube, namespace, "first"),
            )  # fmt: skip
            ready = time.monotonic()

            # While the first runs, the second waits: suspended, no cluster, no pod.
            second = job_status(kube, namespace, "second")
            second_suspended = suspended(kube, namespace, "second")
            clusters = [c["metadata"]["name"] for c in kube.list(RAY_CLUSTER, namespace)["items"]]
            pod_clusters = {
                p["metadata"]["labels"].get("ray.io/cluster")
                for p in kube.list(POD, namespace)["items"]
            }
            queued = workload_owners(ray_crds, namespace)

            first = wait_for(
                "the first RayJob finished",
                lambda: (s := job_status(kube, namespace, "first")).get("jobDeploymentStatus")
                in FINAL and s,
                90, 0.05, explain=lambda: describe_job(kube, namespace, "first"),
            )  # fmt: skip
            finished = time.monotonic()
            wait_for(
                "the second RayJob admitted",
                lambda: not suspended(kube, namespace, "second"),
                60, 0.05, explain=lambda: workload_owners(ray_crds, namespace),
            )  # fmt: skip
            second_admitted = time.monotonic()
            last = wait_for(
                "the second RayJob finished",
                lambda: (s := job_status(kube, namespace, "second")).get("jobDeploymentStatus")
                in FINAL and s,
                90, 0.05, explain=lambda: describe_job(kube, namespace, "second"),
            )  # fmt: skip
    finally:
        delete_quota(ray_crds, namespace)

    print(
        f"\nKueue: created -> first admitted {admitted - created:.2f} s; admitted -> cluster "
        f"ready {ready - admitted:.2f} s; first finished -> second admitted "
        f"{second_admitted - finished:.2f} s"
    )
    assert second_suspended, second
    assert second.get("jobDeploymentStatus") == "Suspended", second
    assert not second.get("rayClusterName"), second
    assert len(clusters) == 1 and clusters[0] == first["rayClusterName"], clusters
    assert pod_clusters == {first["rayClusterName"]}, pod_clusters
    assert queued["first"].get("Admitted") == "True", queued
    assert queued["second"].get("Admitted") != "True", queued
    assert first["jobDeploymentStatus"] == "Complete", first
    assert last["jobDeploymentStatus"] == "Complete", last
