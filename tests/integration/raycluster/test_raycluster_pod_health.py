"""Broken pods are replaced (once), healthy or self-healing ones are left alone."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.kinds import POD, Object
from tests.integration.raycluster.conftest import (
    RunningOperator,
    container,
    events,
    get_cluster,
    live_pods,
    raycluster,
    recorded,
    running_ready,
    settle,
)
from tests.integration.raycluster.watches import pod_ledger
from tests.waiting import wait_for


def _set_status(client: KubeClient, namespace: str, pod: Object, status: dict[str, Any]) -> None:
    """What a kubelet would report, written through the pods/status subresource."""
    client.patch(POD, pod["metadata"]["name"], namespace, {"status": status}, subresource="status")


def _terminated(pod: Object) -> dict[str, Any]:
    name = pod["spec"]["containers"][0]["name"]
    state = {
        "terminated": {
            "exitCode": 1,
            "reason": "Error",
            "message": "ray exited",
            "startedAt": "2026-01-01T00:00:00Z",
            "finishedAt": "2026-01-01T00:00:01Z",
        }
    }
    return {
        "phase": "Running",
        "containerStatuses": [
            {
                "name": name,
                "image": pod["spec"]["containers"][0]["image"],
                "imageID": "",
                "ready": False,
                "restartCount": 0,
                "state": state,
            }
        ],
    }


def _ready(client: KubeClient, namespace: str, name: str, workers: int) -> bool:
    pods = live_pods(client, namespace, name)
    return len(pods) == workers + 1 and all(running_ready(p) for p in pods)


def _head_replaced_once(
    client: KubeClient,
    namespace: str,
    name: str,
    workers: int,
    break_head: Callable[[Object], object],
    quiet: float,
) -> None:
    """On a ready cluster, ``break_head`` breaks the head pod: exactly that pod goes and
    exactly one new head comes (counted by our own watch over ``quiet`` more seconds)."""
    client.create(raycluster(name, namespace, workers=workers))
    wait_for("cluster ready", lambda: _ready(client, namespace, name, workers), timeout=60)
    head = live_pods(client, namespace, name, "head")[0]
    with pod_ledger(client, namespace, name) as ledger:
        break_head(head)
        wait_for(
            "a new head",
            lambda: any(
                p["metadata"]["uid"] != head["metadata"]["uid"] and running_ready(p)
                for p in live_pods(client, namespace, name, "head")
            ),
        )
        settle(quiet)
        assert ledger.deleted_of_initial() == {head["metadata"]["uid"]}
        assert len(ledger.new_pods()) == 1


def test_a_deleted_head_pod_is_recreated_once(
    operator: RunningOperator, client: KubeClient, namespace: str
) -> None:
    _head_replaced_once(
        client,
        namespace,
        "headless",
        2,
        lambda head: client.delete(POD, head["metadata"]["name"], namespace),
        quiet=3.0,
    )
    new_head = live_pods(client, namespace, "headless", "head")[0]
    status = wait_for(
        "status names the new head",
        lambda: (
            s
            if (s := get_cluster(client, namespace, "headless")["status"])["head"].get("podName")
            == new_head["metadata"]["name"]
            else None
        ),
    )
    assert status["head"]["podName"] == new_head["metadata"]["name"]


def test_a_failed_head_pod_is_deleted_and_recreated(
    operator: RunningOperator, client: KubeClient, namespace: str
) -> None:
    _head_replaced_once(
        client,
        namespace,
        "failhead",
        1,
        lambda head: _set_status(client, namespace, head, {"phase": "Failed"}),
        quiet=2.0,
    )
    recorded(client, namespace, "DeletedHeadPod", "failhead")


def test_should_delete_pod_rows_on_real_pods(
    operator: RunningOperator, client: KubeClient, namespace: str
) -> None:
    """Failed / Succeeded: replaced. Running with the Ray container exited: replaced
    under restartPolicy Never, kept under Always (the kubelet restarts it). Pending and
    healthy Running pods: kept."""
    manifest = raycluster("rows", namespace, workers=4, group="always")
    never = {
        "groupName": "never",
        "replicas": 1,
        "minReplicas": 0,
        "maxReplicas": 5,
        "template": {"spec": {"restartPolicy": "Never", "containers": [container("ray-worker")]}},
    }
    pending = {
        "groupName": "pending",
        "replicas": 1,
        "minReplicas": 0,
        "maxReplicas": 5,
        "template": {
            "spec": {
                "nodeSelector": {"no-such-node": "true"},
                "containers": [container("ray-worker")],
            }
        },
    }
    manifest["spec"]["workerGroupSpecs"] += [never, pending]
    client.create(manifest)

    def group(name: str) -> list[Object]:
        return sorted(
            (
                p
                for p in live_pods(client, namespace, "rows", "worker")
                if p["metadata"]["labels"]["ray.io/group"] == name
            ),
            key=lambda p: p["metadata"]["name"],
        )

    wait_for(
        "pods running",
        lambda: (
            len(group("always")) == 4
            and len(group("never")) == 1
            and len(group("pending")) == 1
            and all(running_ready(p) for p in group("always") + group("never"))
        ),
        timeout=60,
    )
    failed, succeeded, exited_always, healthy = group("always")
    exited_never, stuck = group("never")[0], group("pending")[0]
    assert stuck["status"]["phase"] == "Pending"
    with pod_ledger(client, namespace, "rows") as ledger:
        _set_status(client, namespace, failed, {"phase": "Failed"})
        _set_status(client, namespace, succeeded, {"phase": "Succeeded"})
        _set_status(client, namespace, exited_always, _terminated(exited_always))
        _set_status(client, namespace, exited_never, _terminated(exited_never))
        replaced = {
            failed["metadata"]["uid"],
            succeeded["metadata"]["uid"],
            exited_never["metadata"]["uid"],
        }
        wait_for(
            "three replacements running",
            lambda: (
                ledger.deleted_of_initial() == replaced
                and len(group("always")) == 4
                and len(group("never")) == 1
                and all(running_ready(p) for p in group("never"))
            ),
            timeout=30,
        )
        settle(3.0)
        assert ledger.deleted_of_initial() == replaced
        assert len(ledger.new_pods()) == 3
    kept = {p["metadata"]["uid"] for p in live_pods(client, namespace, "rows")}
    assert {
        exited_always["metadata"]["uid"],
        healthy["metadata"]["uid"],
        stuck["metadata"]["uid"],
    } <= kept
    wait_for("a DeletedWorkerPod Event for each of the 3 pods",
             lambda: len(events(client, namespace, "DeletedWorkerPod", "rows")) >= 3,
             timeout=30, interval=0.5)  # fmt: skip
