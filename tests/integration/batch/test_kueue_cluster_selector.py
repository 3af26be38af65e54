"""A RayJob with ``clusterSelector`` and ``suspend`` (ray-project/kuberay#4740).

KubeRay v1.7.0 documents suspend as unsupported for a RayJob that runs on an existing
cluster, and its validation refuses the pair: such a RayJob goes to ``ValidationFailed``
("the ClusterSelector mode doesn't support the suspend operation") and nothing is
submitted. #4740 reports suspend silently ignored instead, the job running on the
cluster anyway. Kueue meets this case on its own: its webhook suspends every RayJob
carrying a queue name, clusterSelector or not, and its job controller then skips a
RayJob with a clusterSelector (``RayJob.Skip``), so nothing ever admits it. Both ways
(the user's own ``suspend: true``, and Kueue's) must end in ``ValidationFailed`` with no
Ray job on the cluster, while the same RayJob without suspend runs there.
"""

from __future__ import annotations

from typing import Any

from hack.kueue.run import QUEUE_NAME_LABEL
from hack.localcluster import LocalCluster
from operator_runtime.clients import DashboardPool, direct_endpoint
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.kinds import RAY_JOB
from tests.integration.batch.conftest import workload_owners
from tests.integration.raycluster.conftest import raycluster
from tests.integration.rayjob.conftest import ClusterHosts, describe_job, rayjob, reaches
from tests.operatorprocess import OperatorProcess
from tests.rayhead import RayHead
from tests.waiting import wait_for

FINAL = ("Complete", "Failed")


def selector_job(name: str, namespace: str, head: RayHead, **spec: Any) -> dict[str, Any]:
    manifest = rayjob(
        name, namespace, head, submissionMode="HTTPMode", shutdownAfterJobFinishes=True,
        clusterSelector={"ray.io/cluster": "shared"}, **spec,
    )  # fmt: skip
    del manifest["spec"]["rayClusterSpec"]
    return manifest


def head_job_ids(head: RayHead) -> set[str]:
    """Every submission id the real head has seen."""
    with DashboardPool() as pool:
        client = pool.dashboard(direct_endpoint(f"127.0.0.1:{head.dashboard_port}"))
        return {str(job.submission_id) for job in client.list_jobs() if job.submission_id}


def test_suspend_with_cluster_selector_is_refused_not_ignored(
    ray_crds: LocalCluster,
    kueue: object,
    kube: KubeClient,
    queued_namespace: str,
    ray_head: RayHead,
) -> None:
    namespace = queued_namespace
    shared = raycluster("shared", namespace, workers=0)
    container = shared["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    container["ports"] = [{"name": "dashboard", "containerPort": ray_head.dashboard_port}]
    queued = selector_job("queued", namespace, ray_head)
    queued["metadata"]["labels"] = {QUEUE_NAME_LABEL: "queue"}
    with ClusterHosts(kube, namespace), OperatorProcess(ray_crds.kubeconfig, namespace):
        kube.create(shared)
        kube.create(selector_job("control", namespace, ray_head))
        control = wait_for(
            "the control RayJob (no suspend) finished on the shared cluster",
            reaches(kube, namespace, "control", *FINAL), 90,
            explain=lambda: describe_job(kube, namespace, "control"),
        )  # fmt: skip
        kube.create(selector_job("explicit", namespace, ray_head, suspend=True))
        kube.create(queued)
        refused = {}
        for name in ("explicit", "queued"):
            refused[name] = wait_for(
                f"{name} ValidationFailed", reaches(kube, namespace, name, "ValidationFailed"), 30,
                explain=lambda name=name: describe_job(kube, namespace, name),
            )  # fmt: skip
        queued_suspend = kube.get(RAY_JOB, "queued", namespace)["spec"].get("suspend")
        on_head = head_job_ids(ray_head)
        workloads = workload_owners(ray_crds, namespace)

    assert control["jobDeploymentStatus"] == "Complete", control
    assert control["jobId"] in on_head, on_head
    assert queued_suspend is True  # Kueue's webhook suspended it
    assert "queued" not in workloads, workloads  # and its controller skips it
    for name, status in refused.items():
        assert "spec.suspend" in status.get("message", ""), (name, status)
        assert not status.get("jobId"), (name, status)
    assert on_head == {control["jobId"]}, on_head
