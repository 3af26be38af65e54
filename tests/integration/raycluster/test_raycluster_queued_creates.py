"""Worker creates run from a queue after the pass that asked for them
(``controllers/raycluster/creates.py``). What a pass that created the pods itself
guaranteed must still hold: a rejected template is reported on the cluster and costs
one request, and a spec changed while creates are queued is what the pods end up
following."""

from __future__ import annotations

from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.kinds import RAY_CLUSTER, Object
from tests.integration.raycluster.conftest import (
    RunningOperator,
    condition,
    get_cluster,
    live_pods,
    pods,
    raycluster,
    recorded,
    set_replicas,
    settle,
)
from tests.kubeclient import edit
from tests.waiting import wait_for


def _total(operator: RunningOperator, name: str, **labels: str) -> float:
    """The sum of a counter's samples whose labels include ``labels``."""
    return sum(
        sample.value
        for metric in operator.registry.collect()
        for sample in metric.samples
        if sample.name == name and labels.items() <= sample.labels.items()
    )


def _replica_failure(client: KubeClient, namespace: str, name: str) -> Object:
    """The cluster's ``ReplicaFailure`` condition, once it is True (30 s at most)."""

    def reported() -> Object | None:
        found = condition(get_cluster(client, namespace, name), "ReplicaFailure")
        return found if found is not None and found["status"] == "True" else None

    found: Object = wait_for("ReplicaFailure=True", reported, timeout=30)
    return found


def test_a_worker_template_the_api_server_rejects_is_reported_and_tried_once_per_pass(
    operator: RunningOperator, client: KubeClient, namespace: str
) -> None:
    manifest = raycluster("rejected", namespace, workers=20)
    worker = manifest["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]
    worker["resources"]["requests"]["cpu"] = "2"  # more than its limit of 1: a 422
    client.create(manifest)

    found = _replica_failure(client, namespace, "rejected")
    assert found["reason"] == "FailedCreateWorkerPod"
    assert "must be less than or equal to cpu limit" in found["message"]
    recorded(client, namespace, "FailedToCreateWorkerPod", "rejected")
    assert len(live_pods(client, namespace, "rejected", "head")) == 1
    assert live_pods(client, namespace, "rejected", "worker") == []
    settle(2)
    # A group without pods sends one create per pass (a probe; the pass then backs off),
    # never the twenty it is missing; the queue stops at a failure. No other request of
    # the operator is refused in this test.
    rejected = _total(operator, "rest_client_requests_total", verb="create", code="422")
    passes = _total(operator, "controller_runtime_reconcile_total", controller="raycluster")
    assert 1 <= rejected <= passes, (rejected, passes)

    def fix(cluster: Object) -> None:
        group = cluster["spec"]["workerGroupSpecs"][0]
        group["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1"

    edit(client, RAY_CLUSTER, "rejected", namespace, fix)
    wait_for(
        "20 workers once the template is fixed",
        lambda: len(live_pods(client, namespace, "rejected", "worker")) == 20,
        timeout=60,
    )

    def cleared() -> bool:
        found = condition(get_cluster(client, namespace, "rejected"), "ReplicaFailure")
        return found is None or found["status"] == "False"

    wait_for("ReplicaFailure cleared", cleared, timeout=30)


def test_a_head_template_the_api_server_rejects_is_reported_and_no_worker_is_made(
    operator: RunningOperator, client: KubeClient, namespace: str
) -> None:
    """The head is made in the pass, before any worker is queued: a head the API server
    refuses leaves no worker behind (as in KubeRay), and the cluster says why."""
    manifest = raycluster("headless", namespace, workers=3)
    head = manifest["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    head["resources"]["requests"]["cpu"] = "2"  # more than its limit of 1: a 422
    client.create(manifest)

    found = _replica_failure(client, namespace, "headless")
    assert found["reason"] == "FailedCreateHeadPod"
    recorded(client, namespace, "FailedToCreateHeadPod", "headless")
    settle(2)
    assert pods(client, namespace, "ray.io/cluster=headless") == [], "no worker without its head"

    def fix(cluster: Object) -> None:
        head = cluster["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
        head["resources"]["requests"]["cpu"] = "1"

    # The operator writes the status meanwhile: a plain read and update met a 409.
    edit(client, RAY_CLUSTER, "headless", namespace, fix)
    wait_for(
        "the head and 3 workers once the template is fixed",
        lambda: (
            len(live_pods(client, namespace, "headless", "head")) == 1
            and len(live_pods(client, namespace, "headless", "worker")) == 3
        ),
        timeout=60,
    )


def test_a_scale_down_while_creates_are_queued_ends_at_the_new_count(
    operator: RunningOperator, client: KubeClient, namespace: str
) -> None:
    client.create(raycluster("shrink", namespace, workers=80))
    wait_for(
        "the first workers",
        lambda: len(live_pods(client, namespace, "shrink", "worker")) >= 2,
        timeout=30,
    )
    set_replicas(client, namespace, "shrink", 2)
    wait_for(
        "2 workers",
        lambda: len(live_pods(client, namespace, "shrink", "worker")) == 2,
        timeout=90,
    )
    settle(3)  # nothing queued under the old spec may still come out
    assert len(live_pods(client, namespace, "shrink", "worker")) == 2
    client.delete(RAY_CLUSTER, "shrink", namespace)


def test_no_timer_polls_the_queued_creates_and_a_deleted_clusters_pods_start_no_pass(
    operator: RunningOperator, client: KubeClient, namespace: str
) -> None:
    """A pass waiting for its queued creates is started again by the queue once they
    are done (``creates_done``), not by a 2 s timer, which made half of all passes at
    scale; and the pods of a deleted cluster, which the garbage collector removes one by
    one, start no pass each (one per pod event before)."""
    source = "operator_reconcile_triggers_total"
    client.create(raycluster("counted", namespace, workers=40))

    def ready() -> bool:
        return (get_cluster(client, namespace, "counted").get("status") or {}).get(
            "state"
        ) == "ready"

    wait_for("state ready", ready, timeout=90)
    # The queue wakes the cluster once its creates are done (the probe and the rest).
    assert _total(operator, source, controller="raycluster", source="creates_done") >= 1

    pod_events = sum(
        _total(operator, source, controller="raycluster", source=f"Pod/{event}")
        for event in ("ADDED", "MODIFIED", "DELETED")
    )
    client.delete(RAY_CLUSTER, "counted", namespace)
    wait_for(
        "the pods gone",
        lambda: pods(client, namespace, "ray.io/cluster=counted") == [],
        timeout=90,
    )
    settle(1)
    after = sum(
        _total(operator, source, controller="raycluster", source=f"Pod/{event}")
        for event in ("ADDED", "MODIFIED", "DELETED")
    )
    # A few may come before the cluster's own deletion reaches the cache (another watch).
    assert after - pod_events <= 5, "pod events of a deleted cluster started passes"
