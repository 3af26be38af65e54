"""SidecarSubmitterRestart's end of a SidecarMode RayJob, shaped after KubeRay v1.7.0's
``TestCheckIsRestartCountExceeded`` (``rayjob_controller_unit_test.go``): with the gate
on, the submitter container restarts on failure, so a failed exit is final only once
it has been terminated at least once and ``restartCount`` reached the backoff limit
(default 2), and an exit 0 never fails the job. The whole pass on a real API server
driving the head pod's status is in tests/integration/rayjob and
tests/integration/kubernetes136."""

from __future__ import annotations

import pytest

from operator_runtime.controllers.rayjob.states import (
    SUBMITTER_CONTAINER,
    _sidecar_restarts_exhausted,
)
from operator_runtime.render.jobs import SUBMITTER_BACKOFF_LIMIT
from operator_runtime.runtime.kinds import Object


def _status(
    restart_count: int,
    *,
    exit_code: int | None,
    last_terminated: bool,
    name: str = SUBMITTER_CONTAINER,
) -> Object:
    status: Object = {"name": name, "restartCount": restart_count, "state": {}, "lastState": {}}
    if exit_code is not None:
        status["state"] = {"terminated": {"exitCode": exit_code}}
    else:
        status["state"] = {"waiting": {"reason": "CrashLoopBackOff"}}
    if last_terminated:
        status["lastState"] = {"terminated": {"exitCode": 1}}
    return status


def _exhausted(status: Object, limit: int = SUBMITTER_BACKOFF_LIMIT) -> bool:
    terminated = (status.get("state") or {}).get("terminated") or {}
    return _sidecar_restarts_exhausted(status, terminated, limit)


@pytest.mark.parametrize(
    ("restart_count", "exit_code", "expected"),
    [
        (1, 1, False),  # restart count below limit of 2
        (2, 1, True),  # restart count at limit of 2
        (3, 0, False),  # successful exit should not trigger failure
    ],
    ids=["below the limit", "at the limit", "exit 0"],
)
def test_check_is_restart_count_exceeded(
    restart_count: int, exit_code: int, expected: bool
) -> None:
    """KubeRay's three cases, each with a current and a last termination."""
    status = _status(restart_count, exit_code=exit_code, last_terminated=True)
    assert _exhausted(status) is expected


def test_the_default_backoff_limit_is_kuberays() -> None:
    assert SUBMITTER_BACKOFF_LIMIT == 2


def test_never_terminated_before_is_not_a_failure_whatever_the_count() -> None:
    """Only a container terminated at least once (``lastState.terminated``) counts."""
    assert not _exhausted(_status(5, exit_code=1, last_terminated=False))


def test_a_crash_looping_submitter_fails_at_the_limit() -> None:
    """Between restarts the kubelet reports ``waiting`` (CrashLoopBackOff) with the last
    failure in ``lastState``: that is the case that ends the job."""
    assert not _exhausted(_status(1, exit_code=None, last_terminated=True))
    assert _exhausted(_status(2, exit_code=None, last_terminated=True))


def test_a_running_submitter_restarted_up_to_the_limit_fails() -> None:
    status = _status(2, exit_code=None, last_terminated=True)
    status["state"] = {"running": {"startedAt": "2026-01-01T00:00:00Z"}}
    assert _exhausted(status)
