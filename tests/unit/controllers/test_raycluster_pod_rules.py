"""shouldDeletePod row by row, and the pod predicates the status relies on."""

from __future__ import annotations

from typing import Any

import pytest

from operator_runtime.controllers.raycluster.podrules import (
    all_running_and_ready,
    ray_container_terminated,
    running_and_ready,
    should_delete_pod,
)


def pod(
    phase: str,
    *,
    policy: str = "",
    ray_state: dict[str, Any] | None = None,
    other_state: dict[str, Any] | None = None,
    ready: str | None = None,
) -> dict[str, Any]:
    statuses = []
    if other_state is not None:
        # Listed first on purpose: statuses are matched by name, not position.
        statuses.append({"name": "sidecar", "state": other_state})
    if ray_state is not None:
        statuses.append({"name": "ray", "state": ray_state})
    spec: dict[str, Any] = {"containers": [{"name": "ray"}, {"name": "sidecar"}]}
    if policy:
        spec["restartPolicy"] = policy
    status: dict[str, Any] = {"phase": phase, "containerStatuses": statuses}
    if ready is not None:
        status["conditions"] = [{"type": "Ready", "status": ready}]
    return {"metadata": {"name": "p"}, "spec": spec, "status": status}


TERMINATED = {"terminated": {"exitCode": 1, "reason": "Error"}}
RUNNING = {"running": {"startedAt": "2026-01-01T00:00:00Z"}}


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        (pod("Failed"), True),
        (pod("Succeeded"), True),
        (pod("Failed", policy="Always", ray_state=RUNNING), True),
        (pod("Running", policy="Never", ray_state=TERMINATED), True),
        (pod("Running", policy="Always", ray_state=TERMINATED), False),
        (pod("Running", policy="OnFailure", ray_state=TERMINATED), False),
        (pod("Running", ray_state=TERMINATED), False),  # unset means Always
        (pod("Running", policy="Never", ray_state=RUNNING), False),
        (pod("Running", policy="Never", ray_state=RUNNING, other_state=TERMINATED), False),
        (pod("Pending", policy="Never"), False),
        (pod("Pending", policy="Never", ray_state=TERMINATED), False),
        (pod("Unknown"), False),
    ],
)
def test_should_delete_pod(case: dict[str, Any], expected: bool) -> None:
    verdict = should_delete_pod(case, "worker")
    assert verdict.delete is expected
    assert verdict.reason


def test_the_ray_container_is_found_by_name() -> None:
    found = pod("Running", ray_state=TERMINATED, other_state=RUNNING)
    assert ray_container_terminated(found) == TERMINATED["terminated"]
    assert ray_container_terminated(pod("Running", other_state=TERMINATED)) is None


def test_running_and_ready() -> None:
    assert running_and_ready(pod("Running", ready="True"))
    assert not running_and_ready(pod("Running", ready="False"))
    assert not running_and_ready(pod("Running"))
    assert not running_and_ready(pod("Pending", ready="True"))


def test_all_running_and_ready_follows_kuberay() -> None:
    assert not all_running_and_ready([])
    assert all_running_and_ready([pod("Running", ready="True"), pod("Running")])
    assert not all_running_and_ready([pod("Running", ready="True"), pod("Running", ready="False")])
    assert not all_running_and_ready([pod("Running", ready="True"), pod("Pending")])
