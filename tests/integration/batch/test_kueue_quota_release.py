"""Kueue gives an evicted object's quota back only after our operator reports it
suspended (kubernetes-sigs/kueue#15980).

Kueue evicts by setting ``suspend`` and keeps the Workload's quota while the object is
*active*: for a RayCluster while ``status.state`` is ``ready``, for a RayJob while its
``jobDeploymentStatus`` is neither ``Suspended`` nor new. So the quota is released, and
the next object admitted, as soon as the operator's status stops saying so. It must not
stop saying so before the pods are gone: KubeRay reports ``suspended`` only when the
cluster has no pod left (a terminating one included), and a RayJob ``Suspended`` only
when its cluster is gone.

The eviction is a preemption: the first object runs at a low priority and the second,
of a higher one, needs its quota. (Deactivating the first's Workload would not do: Kueue
v0.17.0 drops an inactive Workload from its quota cache at once, whatever the job does.)
While the evicted object's last pod, or the RayJob's cluster, is held by a finalizer of
the test's, the quota must stay and the second wait; once it is let go, the status must
say suspended before the Workload loses its quota and before the second is admitted.
kwok empties a deleted pod's finalizers itself, so a ValidatingAdmissionPolicy refuses
that until the test labels the pod ``LET_GO_LABEL``.

Order is proved by reads, never by two clocks: each poll reads the later event's object
first (the Workload, or the second object) and the earlier one's (the evicted object's
status) after it; a release seen before a read that still finds the object unsuspended
is a release that came first.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

import yaml

from hack.localcluster import LocalCluster
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.errors import Forbidden, Invalid, NotFound
from operator_runtime.runtime.kinds import POD, RAY_CLUSTER, RAY_JOB
from tests.integration.batch.conftest import apply_quota, create_in_order, delete_quota
from tests.integration.batch.test_kueue_raycluster import queued_cluster
from tests.integration.batch.test_kueue_rayjob import queued_job
from tests.integration.rayjob.conftest import ClusterHosts, describe_job, job_status
from tests.operatorprocess import OperatorProcess
from tests.rayhead import RayHead
from tests.waiting import wait_for

HOLD_FINALIZER = "pulumi-ray.test/hold"
LET_GO_LABEL = "pulumi-ray.test/let-go"
HOLD: dict[str, Any] = {"metadata": {"finalizers": [HOLD_FINALIZER]}}
LET_GO: dict[str, Any] = {"metadata": {"finalizers": None, "labels": {LET_GO_LABEL: "true"}}}
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
LOW, HIGH = "pulumi-ray-test-low", "pulumi-ray-test-high"
HELD_FOR = 5.0
"""How long the held eviction is watched: Kueue acts on a status change within
milliseconds, so a release that does not wait for the operator shows well inside it."""


def workload(cluster: LocalCluster, namespace: str, owner: str) -> dict[str, Any]:
    """The Workload ``owner`` owns: its name and condition type -> status."""
    found = cluster.get_json("-n", namespace, "workloads.kueue.x-k8s.io")
    for item in found["items"]:
        owners = {o.get("name") for o in item["metadata"].get("ownerReferences") or ()}
        if owner in owners:
            conditions = {
                c["type"]: c["status"] for c in (item.get("status") or {}).get("conditions") or ()
            }
            return {"name": item["metadata"]["name"], **conditions}
    raise AssertionError(f"no Workload owned by {owner}: {found['items']}")


def allow_preemption(cluster: LocalCluster, namespace: str) -> None:
    """Two WorkloadPriorityClasses, and the namespace's ClusterQueue preempting a lower
    priority for a higher one."""
    classes = [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
         "metadata": {"name": name}, "value": value}
        for name, value in ((LOW, 10), (HIGH, 1000))
    ]  # fmt: skip
    cluster.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump_all(classes))
    cluster.kubectl(
        "patch", "clusterqueue.kueue.x-k8s.io", namespace, "--type=merge",
        "-p", yaml.safe_dump({"spec": {"preemption": {"withinClusterQueue": "LowerPriority"}}}),
    )  # fmt: skip


def with_priority(manifest: dict[str, Any], priority: str) -> dict[str, Any]:
    manifest["metadata"]["labels"][PRIORITY_LABEL] = priority
    return manifest


def hold_pods_policy(cluster: LocalCluster, namespace: str) -> list[dict[str, Any]]:
    """A ValidatingAdmissionPolicy (and its binding, for ``namespace``) refusing any
    update that takes ``HOLD_FINALIZER`` off a pod not labelled ``LET_GO_LABEL``."""
    keeps = (
        f"!(has(oldObject.metadata.finalizers) && '{HOLD_FINALIZER}' in "
        f"oldObject.metadata.finalizers) || (has(object.metadata.finalizers) && "
        f"'{HOLD_FINALIZER}' in object.metadata.finalizers) || "
        f"(has(object.metadata.labels) && '{LET_GO_LABEL}' in object.metadata.labels)"
    )
    name = f"hold-{namespace}"
    documents = [
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {"resourceRules": [
                    {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"],
                     "resources": ["pods"]},
                ]},
                "validations": [{"expression": keeps, "message": "held by the test"}],
            },
        },
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {
                "policyName": name,
                "validationActions": ["Deny"],
                "matchResources": {"namespaceSelector": {"matchLabels": {
                    "kubernetes.io/metadata.name": namespace}}},
            },
        },
    ]  # fmt: skip
    cluster.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump_all(documents))
    return documents


def hold_pod(kube: KubeClient, namespace: str, pod: str) -> None:
    """Put ``HOLD_FINALIZER`` on the pod and wait until the policy refuses taking it off
    (a new policy takes a moment to be enforced)."""

    def refused() -> bool:
        kube.patch(POD, pod, namespace, HOLD)
        try:
            kube.patch(POD, pod, namespace, {"metadata": {"finalizers": None}})
        except (Invalid, Forbidden):
            return True
        return False

    wait_for("the hold policy enforced", refused, 30, 0.2)


def cluster_state(kube: KubeClient, namespace: str, name: str) -> str:
    return str((kube.get(RAY_CLUSTER, name, namespace).get("status") or {}).get("state", ""))


def suspend_of(kube: KubeClient, kind: Any, namespace: str, name: str) -> bool:
    return bool(kube.get(kind, name, namespace)["spec"].get("suspend"))


def follow_release(
    cluster: LocalCluster,
    kube: KubeClient,
    namespace: str,
    kind: Any,
    evicted_reported: Callable[[], bool],
    timeout: float,
) -> dict[str, float]:
    """Poll until the second object is admitted; fail on a release or an admission
    seen before the evicted object's status said suspended. Returns when each was
    first seen (monotonic)."""
    seen: dict[str, float] = {}
    deadline = time.monotonic() + timeout
    while "admitted" not in seen:
        if time.monotonic() > deadline:
            raise AssertionError(f"the second not admitted in {timeout:.0f} s: {seen}")
        released = workload(cluster, namespace, "first").get("QuotaReserved") != "True"
        admitted = not suspend_of(kube, kind, namespace, "second")
        reported = evicted_reported()  # read last: the status as of after both reads
        now = time.monotonic()
        if reported:
            seen.setdefault("reported", now)
        if released:
            assert reported, "the Workload lost its quota before the status said suspended"
            seen.setdefault("released", now)
        if admitted:
            assert reported, "the second was admitted before the status said suspended"
            seen["admitted"] = now
        time.sleep(0.02)
    return seen


def watch_held(
    cluster: LocalCluster, kube: KubeClient, namespace: str, kind: Any, first_state: Any
) -> list[tuple[str, bool, str]]:
    """``HELD_FOR`` seconds of (first's QuotaReserved, second suspended, first's state)."""
    held: list[tuple[str, bool, str]] = []
    until = time.monotonic() + HELD_FOR
    while time.monotonic() < until:
        held.append((
            workload(cluster, namespace, "first").get("QuotaReserved", ""),
            suspend_of(kube, kind, namespace, "second"),
            first_state(),
        ))  # fmt: skip
        time.sleep(0.1)
    return held


def test_raycluster_quota_waits_for_our_suspended(
    ray_crds: LocalCluster,
    kueue: object,
    gc_knows_workloads: None,
    kube: KubeClient,
    queued_namespace: str,
) -> None:
    namespace = queued_namespace
    apply_quota(ray_crds, namespace, cpu="1500m", memory="1536Mi")
    allow_preemption(ray_crds, namespace)
    policy = hold_pods_policy(ray_crds, namespace)
    head_pod = ""
    try:
        with OperatorProcess(ray_crds.kubeconfig, namespace):
            create_in_order(
                kube, ray_crds, namespace, with_priority(queued_cluster("first", namespace), LOW)
            )  # fmt: skip
            wait_for(
                "the first RayCluster ready",
                lambda: cluster_state(kube, namespace, "first") == "ready", 60, 0.05,
            )  # fmt: skip
            pods = kube.list(POD, namespace, label_selector="ray.io/cluster=first")["items"]
            assert len(pods) == 1, [p["metadata"]["name"] for p in pods]
            head_pod = pods[0]["metadata"]["name"]
            hold_pod(kube, namespace, head_pod)

            preempting = time.monotonic()
            create_in_order(
                kube, ray_crds, namespace, with_priority(queued_cluster("second", namespace), HIGH)
            )  # fmt: skip
            wait_for(
                "the first RayCluster's head pod terminating (preempted)",
                lambda: bool(kube.get(POD, head_pod, namespace)["metadata"]
                             .get("deletionTimestamp")),
                60, 0.05, explain=lambda: workload(ray_crds, namespace, "first"),
            )  # fmt: skip
            first_suspend = suspend_of(kube, RAY_CLUSTER, namespace, "first")
            evicted = workload(ray_crds, namespace, "first").get("Evicted")
            held = watch_held(
                ray_crds, kube, namespace, RAY_CLUSTER,
                lambda: cluster_state(kube, namespace, "first"),
            )  # fmt: skip

            kube.patch(POD, head_pod, namespace, LET_GO)
            let_go = time.monotonic()
            head_pod = ""
            seen = follow_release(
                ray_crds, kube, namespace, RAY_CLUSTER,
                lambda: cluster_state(kube, namespace, "first") == "suspended", 60,
            )  # fmt: skip
    finally:
        if head_pod:
            with contextlib.suppress(NotFound):
                kube.patch(POD, head_pod, namespace, LET_GO)
        for document in reversed(policy):
            ray_crds.kubectl("delete", document["kind"], document["metadata"]["name"], check=False)
        delete_quota(ray_crds, namespace)
    print(
        f"\nKueue RayCluster preemption: pod let go -> suspended {seen['reported'] - let_go:.2f} s;"
        f" -> quota released {seen.get('released', seen['admitted']) - let_go:.2f} s;"
        f" -> second admitted {seen['admitted'] - let_go:.2f} s"
        f" (second created {let_go - preempting:.1f} s before the let-go)"
    )
    assert first_suspend, "Kueue did not suspend the preempted RayCluster"
    assert evicted == "True"
    assert held and all(h == ("True", True, "ready") for h in held), held[-3:]


def test_rayjob_quota_waits_for_our_suspended(
    ray_crds: LocalCluster,
    kueue: object,
    gc_knows_workloads: None,
    kube: KubeClient,
    queued_namespace: str,
    ray_head: RayHead,
) -> None:
    namespace = queued_namespace
    apply_quota(ray_crds, namespace, cpu="1500m", memory="1536Mi")
    allow_preemption(ray_crds, namespace)
    held_cluster = ""
    try:
        with ClusterHosts(kube, namespace), OperatorProcess(ray_crds.kubeconfig, namespace):
            first = with_priority(queued_job("first", namespace, ray_head), LOW)
            first["spec"]["entrypoint"] = 'python -c "import time; time.sleep(120)"'
            create_in_order(kube, ray_crds, namespace, first)
            running = wait_for(
                "the first RayJob running",
                lambda: (s := job_status(kube, namespace, "first")).get("jobDeploymentStatus")
                == "Running" and s,
                90, 0.05, explain=lambda: describe_job(kube, namespace, "first"),
            )  # fmt: skip
            held_cluster = str(running["rayClusterName"])
            kube.patch(RAY_CLUSTER, held_cluster, namespace, HOLD)

            create_in_order(
                kube, ray_crds, namespace,
                with_priority(queued_job("second", namespace, ray_head), HIGH),
            )  # fmt: skip
            wait_for(
                "the first RayJob's cluster being deleted (preempted)",
                lambda: bool(kube.get(RAY_CLUSTER, held_cluster, namespace)["metadata"]
                             .get("deletionTimestamp")),
                60, 0.05, explain=lambda: describe_job(kube, namespace, "first"),
            )  # fmt: skip
            evicted = workload(ray_crds, namespace, "first").get("Evicted")
            held = watch_held(
                ray_crds, kube, namespace, RAY_JOB,
                lambda: str(job_status(kube, namespace, "first").get("jobDeploymentStatus")),
            )  # fmt: skip

            kube.patch(RAY_CLUSTER, held_cluster, namespace, {"metadata": {"finalizers": None}})
            let_go = time.monotonic()
            held_cluster = ""
            seen = follow_release(
                ray_crds, kube, namespace, RAY_JOB,
                lambda: job_status(kube, namespace, "first").get("jobDeploymentStatus")
                == "Suspended",
                60,
            )  # fmt: skip
            last = wait_for(
                "the second RayJob finished",
                lambda: (s := job_status(kube, namespace, "second")).get("jobDeploymentStatus")
                in ("Complete", "Failed") and s,
                90, 0.05, explain=lambda: describe_job(kube, namespace, "second"),
            )  # fmt: skip
    finally:
        if held_cluster:
            with contextlib.suppress(NotFound):
                kube.patch(RAY_CLUSTER, held_cluster, namespace, {"metadata": {"finalizers": None}})
        delete_quota(ray_crds, namespace)
    print(
        f"\nKueue RayJob preemption: cluster let go -> Suspended {seen['reported'] - let_go:.2f} s;"
        f" -> quota released {seen.get('released', seen['admitted']) - let_go:.2f} s;"
        f" -> second admitted {seen['admitted'] - let_go:.2f} s"
    )
    assert evicted == "True"
    assert held and all(h == ("True", True, "Suspending") for h in held), held[-3:]
    assert last["jobDeploymentStatus"] == "Complete", last
