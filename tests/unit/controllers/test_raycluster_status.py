"""The status computation: counts, resources, state, conditions, head and endpoints."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from operator_runtime.api import RayCluster
from operator_runtime.api.reasons import ReplicaFailure
from operator_runtime.controllers.clusterstatus import status_changed
from operator_runtime.controllers.raycluster.podwrites import ReplicaFailureError
from operator_runtime.controllers.raycluster.status import (
    StatusError,
    StatusInputs,
    compute_status,
    provisioned_now,
)
from operator_runtime.render.resources import Amount, format_quantity

NOW = datetime.datetime(2026, 3, 1, 12, 0, 0, tzinfo=datetime.UTC)
LATER = NOW + datetime.timedelta(seconds=30)


def cluster(
    replicas: int = 2, *, suspend: bool | None = None, group: dict[str, Any] | None = None
) -> RayCluster:
    resources = {
        "requests": {"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": "1"},
        "limits": {"cpu": "1", "memory": "2Gi", "google.com/tpu": "4"},
    }
    spec: dict[str, Any] = {
        "headGroupSpec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "h",
                            "image": "i",
                            "resources": {"limits": {"cpu": "2", "memory": "4Gi"}},
                        }
                    ]
                }
            }
        },
        "workerGroupSpecs": [
            {
                "groupName": "g",
                "replicas": replicas,
                "minReplicas": 1,
                "maxReplicas": 10,
                "template": {
                    "spec": {"containers": [{"name": "w", "image": "i", "resources": resources}]}
                },
                **(group or {}),
            }
        ],
    }
    if suspend is not None:
        spec["suspend"] = suspend
    return RayCluster.model_validate({"metadata": {"name": "c", "namespace": "ns"}, "spec": spec})


def pod(
    node_type: str,
    name: str,
    *,
    phase: str = "Running",
    ready: str = "True",
    ip: str = "10.0.0.1",
    **status: Any,
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"ray.io/node-type": node_type}},
        "status": {
            "phase": phase,
            "podIP": ip,
            "conditions": [{"type": "Ready", "status": ready, **status}],
        },
    }


HEAD_SERVICE = {
    "metadata": {"name": "c-head-svc"},
    "spec": {
        "clusterIP": "None",
        "ports": [
            {"name": "dashboard", "port": 8265, "targetPort": 8265},
            {"name": "client", "port": 10001, "targetPort": 10001, "nodePort": 30001},
            {"port": 9999, "targetPort": 9999},
        ],
    },
}


def compute(
    model: RayCluster,
    pods: list[dict[str, Any]],
    old: dict[str, Any] | None = None,
    error: BaseException | None = None,
    now: datetime.datetime = NOW,
    services: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return compute_status(
        StatusInputs(
            cluster=model,
            old_status=old or {},
            generation=3,
            pods=pods,
            head_services=[HEAD_SERVICE] if services is None else services,
            step_error=error,
            conditions_gate=True,
            now=now,
        )
    )


def conditions(status: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in status.get("conditions", [])}


READY_PODS = [pod("head", "h"), pod("worker", "w1"), pod("worker", "w2")]


def test_a_complete_cluster_is_ready_and_provisioned() -> None:
    status = compute(cluster(), READY_PODS)
    assert status["state"] == "ready"
    assert status["stateTransitionTimes"] == {"ready": "2026-03-01T12:00:00Z"}
    assert conditions(status) == {
        "HeadPodReady": ("True", "HeadPodRunningAndReady"),
        "RayClusterProvisioned": ("True", "AllPodRunningAndReadyFirstTime"),
        "RayClusterSuspended": ("False", "RayClusterSuspended"),
        "RayClusterSuspending": ("False", "RayClusterSuspending"),
    }
    assert (status["readyWorkerReplicas"], status["availableWorkerReplicas"]) == (2, 2)
    assert (
        status["desiredWorkerReplicas"],
        status["minWorkerReplicas"],
        status["maxWorkerReplicas"],
    ) == (2, 1, 10)
    assert status["observedGeneration"] == 3
    assert status["head"] == {
        "podIP": "10.0.0.1",
        "podName": "h",
        "serviceIP": "10.0.0.1",
        "serviceName": "c-head-svc",
    }
    assert status["endpoints"] == {"dashboard": "8265", "client": "30001"}


def test_desired_resources_use_requests_then_limits_times_raw_replicas() -> None:
    status = compute(cluster(replicas=3), READY_PODS)
    # head 2 CPU + 3 x 500m; memory 4Gi + 3 x 1Gi; GPU 3 x 1; TPU (a limit) 3 x 4.
    assert (status["desiredCPU"], status["desiredMemory"]) == ("3500m", "7Gi")
    assert (status["desiredGPU"], status["desiredTPU"]) == ("3", "12")
    suspended_group = compute(cluster(replicas=3, group={"suspend": True}), READY_PODS)
    assert (suspended_group["desiredCPU"], suspended_group["desiredGPU"]) == ("2", "0")
    assert suspended_group["desiredWorkerReplicas"] == 0
    assert suspended_group["maxWorkerReplicas"] == 0


@pytest.mark.parametrize(
    ("value", "binary", "text"),
    [
        ("0", False, "0"),
        ("6", False, "6"),
        ("1.5", False, "1500m"),
        ("2000", False, "2k"),
        ("0.0000000001", False, "1n"),
        (str(6 * 2**30), True, "6Gi"),
        ("1536", True, "1536"),
        (str(2**30 + 1), True, str(2**30 + 1)),
        ("0.5", True, "500m"),
    ],
)
def test_quantities_print_like_kubernetes(value: str, binary: bool, text: str) -> None:
    from fractions import Fraction

    assert format_quantity(Amount(Fraction(value), binary)) == text


def test_state_ready_is_sticky_and_provisioned_is_set_once() -> None:
    first = compute(cluster(), READY_PODS)
    broken = [pod("head", "h"), pod("worker", "w1", phase="Failed"), pod("worker", "w2")]
    second = compute(cluster(), broken, old=first, now=LATER)
    assert second["state"] == "ready"
    assert conditions(second)["RayClusterProvisioned"] == ("True", "AllPodRunningAndReadyFirstTime")
    assert second["readyWorkerReplicas"] == 1
    assert not provisioned_now(first, second) and provisioned_now({}, first)


def test_not_ready_pods_keep_provisioning_false_and_state_unset() -> None:
    status = compute(cluster(), [pod("head", "h"), pod("worker", "w1", ready="False")])
    assert "state" not in status
    assert conditions(status)["RayClusterProvisioned"] == ("False", "RayClusterPodsProvisioning")


def test_head_pod_ready_reports_the_waiting_container() -> None:
    head = pod("head", "h", ready="False", reason="ContainersNotReady", message="not ready")
    head["status"]["containerStatuses"] = [
        {
            "name": "ray-head",
            "state": {"waiting": {"reason": "ImagePullBackOff", "message": "no such image"}},
        }
    ]
    status = compute(cluster(), [head])
    found = next(c for c in status["conditions"] if c["type"] == "HeadPodReady")
    assert (found["status"], found["reason"]) == ("False", "ImagePullBackOff")
    assert found["message"] == "not ready; ray-head: no such image"
    assert conditions(compute(cluster(), []))["HeadPodReady"] == ("False", "HeadPodNotFound")


def test_replica_failure_is_set_while_a_pod_operation_fails_and_removed_after() -> None:
    error = ReplicaFailureError(ReplicaFailure.CREATE_WORKER_POD, RuntimeError("quota"))
    failing = compute(cluster(), READY_PODS[:2], error=error)
    assert conditions(failing)["ReplicaFailure"] == ("True", "FailedCreateWorkerPod")
    assert "state" not in failing
    other = compute(cluster(), READY_PODS[:2], old=failing, error=RuntimeError("other"))
    assert "ReplicaFailure" in conditions(other), "a non-pod error leaves the condition alone"
    healed = compute(cluster(), READY_PODS, old=failing)
    assert "ReplicaFailure" not in conditions(healed)


def test_suspend_moves_through_suspending_to_suspended_and_back() -> None:
    ready = compute(cluster(), READY_PODS)
    requested = compute(cluster(suspend=True), READY_PODS, old=ready, now=LATER)
    assert conditions(requested)["RayClusterSuspending"] == ("True", "RayClusterSuspending")
    draining = compute(cluster(suspend=True), READY_PODS[:1], old=requested, now=LATER)
    assert conditions(draining)["RayClusterSuspending"][0] == "True"
    empty = compute(cluster(suspend=True), [], old=draining, now=LATER)
    assert conditions(empty)["RayClusterSuspending"][0] == "False"
    assert conditions(empty)["RayClusterSuspended"][0] == "True"
    assert conditions(empty)["RayClusterProvisioned"] == ("False", "RayClusterPodsProvisioning")
    assert empty["state"] == "suspended"
    assert empty["stateTransitionTimes"]["suspended"] == "2026-03-01T12:00:30Z"
    resumed = compute(cluster(suspend=False), [], old=empty, now=LATER)
    assert conditions(resumed)["RayClusterSuspended"][0] == "False"
    assert resumed["state"] == "suspended", "state only changes when the pods are back"
    back = compute(cluster(suspend=False), READY_PODS, old=resumed, now=LATER)
    assert back["state"] == "ready"
    assert conditions(back)["RayClusterProvisioned"][0] == "True"


def test_transition_times_move_only_with_the_status() -> None:
    first = compute(cluster(), READY_PODS)
    again = compute(cluster(), READY_PODS, old=first, now=LATER)
    assert again["conditions"] == first["conditions"]
    assert not status_changed(first, again), "only lastUpdateTime moved"
    assert again["lastUpdateTime"] != first["lastUpdateTime"]


def test_missing_or_duplicate_head_services_and_heads_are_errors() -> None:
    with pytest.raises(StatusError, match="does not exist"):
        compute(cluster(), READY_PODS, services=[])
    with pytest.raises(StatusError, match="several head Services"):
        compute(cluster(), READY_PODS, services=[HEAD_SERVICE, HEAD_SERVICE])
    with pytest.raises(StatusError, match="2 head pods"):
        compute(cluster(), [pod("head", "a"), pod("head", "b")])


def test_a_cluster_ip_head_service_reports_its_own_ip() -> None:
    service = {**HEAD_SERVICE, "spec": {**HEAD_SERVICE["spec"], "clusterIP": "10.96.0.7"}}
    status = compute(cluster(), READY_PODS, services=[service])
    assert status["head"]["serviceIP"] == "10.96.0.7"
