"""The worker loop's handling of reconcile outcomes (no API server involved)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import pytest
from prometheus_client import CollectorRegistry

from operator_runtime.runtime.clock import FakeClock
from operator_runtime.runtime.errors import (
    Conflict,
    InternalError,
    PermanentError,
    TemporaryError,
)
from operator_runtime.runtime.manager import Manager, ManagerOptions, _Runner
from operator_runtime.runtime.metrics import RuntimeMetrics
from operator_runtime.runtime.reconcile import ObjectKey, Result, Watch
from operator_runtime.runtime.workqueue import WorkQueue

KEY = ObjectKey("ns", "obj")


class Scripted:
    name = "scripted"

    def __init__(
        self, outcome: Result | Exception, during: Callable[[], None] = lambda: None
    ) -> None:
        self.outcome, self.during = outcome, during

    def watches(self) -> Sequence[Watch]:
        return ()

    def reconcile(self, key: ObjectKey) -> Result:
        self.during()
        if isinstance(self.outcome, Exception):
            raise self.outcome
        return self.outcome


def run_once(
    outcome: Result | Exception, *, clock_moved_mid_pass: float = 0.0
) -> tuple[WorkQueue[ObjectKey], FakeClock, RuntimeMetrics]:
    """One pass of a controller that returns (or raises) ``outcome``; a test's clock moved
    by ``clock_moved_mid_pass`` seconds while the pass runs."""
    clock = FakeClock()
    metrics = RuntimeMetrics(CollectorRegistry())
    manager = Manager(None, ManagerOptions(), metrics=metrics, clock=clock)  # type: ignore[arg-type]
    queue: WorkQueue[ObjectKey] = WorkQueue(clock=clock)
    runner = _Runner(Scripted(outcome, lambda: clock.advance(clock_moved_mid_pass)), queue)
    queue.add(KEY)
    key = queue.get(block=False)
    assert key == KEY
    manager._reconcile(runner, key)
    queue.done(key)
    return queue, clock, metrics


def count(metrics: RuntimeMetrics, result: str) -> float:
    value = metrics.registry.get_sample_value(
        "controller_runtime_reconcile_total", {"controller": "scripted", "result": result}
    )
    return value or 0.0


def test_success_is_counted_and_not_requeued() -> None:
    queue, clock, metrics = run_once(Result())
    clock.advance(3600)
    assert queue.get(block=False) is None
    assert count(metrics, "success") == 1


def test_requeue_after_brings_the_key_back_at_that_time() -> None:
    queue, clock, metrics = run_once(Result(requeue_after=10))
    clock.advance(9.9)
    assert queue.get(block=False) is None
    clock.advance(0.2)
    assert queue.get(block=False) == KEY
    assert count(metrics, "requeue_after") == 1


def test_requeue_after_counts_from_the_time_the_pass_read_when_the_clock_jumped() -> None:
    """The RayCronJob's next tick 60 s after the time it read; the test's clock moved 50 s
    meanwhile: the key is due 10 s later, not 60."""
    queue, clock, _ = run_once(Result(requeue_after=60), clock_moved_mid_pass=50)
    clock.advance(9.9)
    assert queue.get(block=False) is None
    clock.advance(0.2)
    assert queue.get(block=False) == KEY


@pytest.mark.parametrize("error", [RuntimeError("boom"), Conflict(409, "stale"),
                                   TemporaryError("not yet"),
                                   InternalError(500, "failed calling webhook")])  # fmt: skip
def test_errors_are_retried_with_backoff_and_logged_with_the_key(
    error: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    queue, clock, metrics = run_once(error)
    assert queue.num_requeues(KEY) == 1
    assert queue.get(block=False) is None
    clock.advance(0.005)
    assert queue.get(block=False) == KEY
    assert count(metrics, "error") == 1
    [record] = [r for r in caplog.records if r.name == "operator_runtime.runtime.manager"]
    assert "ns/obj" in record.getMessage() and getattr(record, "key", None) == "ns/obj"


def test_an_api_error_is_one_line_naming_the_request_site_and_a_bug_keeps_its_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The API server refusing (a webhook down, a namespace terminating) is not a fault
    of the operator's: no traceback, but the controller's frame that made the request."""
    run_once(InternalError(500, "failed calling webhook"))
    run_once(RuntimeError("boom"))
    api, bug = [r for r in caplog.records if r.name == "operator_runtime.runtime.manager"]
    assert api.exc_info is None
    assert "failed calling webhook" in api.getMessage()
    assert "test_manager_worker.py:" in api.getMessage() and "reconcile" in api.getMessage()
    assert bug.exc_info is not None and "raised" in bug.getMessage()


def test_a_temporary_error_with_a_delay_uses_that_delay() -> None:
    queue, clock, _ = run_once(TemporaryError("wait for the head", delay=5))
    clock.advance(4.9)
    assert queue.get(block=False) is None
    clock.advance(0.2)
    assert queue.get(block=False) == KEY


def test_a_permanent_error_is_not_retried(caplog: pytest.LogCaptureFixture) -> None:
    queue, clock, metrics = run_once(PermanentError("spec is invalid"))
    clock.advance(3600)
    assert queue.get(block=False) is None
    assert count(metrics, "error") == 1
    assert any("permanently" in r.getMessage() for r in caplog.records)


def test_a_started_controller_exports_its_counters_at_zero() -> None:
    """As controller-runtime's: an error rate of 0, not no data, before the first error."""
    metrics = RuntimeMetrics(CollectorRegistry())
    manager = Manager(None, ManagerOptions(), metrics=metrics)  # type: ignore[arg-type]
    runner = _Runner(Scripted(Result()), WorkQueue(clock=FakeClock()))
    manager._runners.append(runner)
    assert (
        metrics.registry.get_sample_value(
            "controller_runtime_reconcile_errors_total", {"controller": "scripted"}
        )
        is None
    )

    manager._start_workers()
    runner.queue.shut_down()
    for thread in runner.threads:
        thread.join(timeout=10)

    samples = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in metrics.registry.collect()
        for sample in family.samples
        if sample.labels.get("controller") == "scripted" and not sample.name.endswith("_created")
    }
    assert samples == {
        **{
            ("controller_runtime_reconcile_total",
             (("controller", "scripted"), ("result", result))): 0.0
            for result in ("success", "error", "requeue_after")
        },
        ("controller_runtime_reconcile_errors_total", (("controller", "scripted"),)): 0.0,
        ("controller_runtime_active_workers", (("controller", "scripted"),)): 0.0,
    }  # fmt: skip
