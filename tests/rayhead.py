"""The tests' real Ray head (``hack/rayhead.py``; ``make demo`` starts one too) and the
module-scoped fixture the tiers that need one import into their conftest:

    from tests.rayhead import module_ray_head, ray_head  # noqa: F401 (fixtures)

A module gets the head its worker kept from the module before, or a new one. Between
modules a head is handed on, its jobs stopped and deleted (``forget_jobs``), while the
worker's next module wants one alike; the root conftest stops it (``stop_unwanted``)
before the first test that does not, and at the end of the session. Starting a head
costs some 12 CPU-s and stopping it 4 (``ray start``, the dashboard's module processes),
and a worker often runs several such modules in a row (the RayJob tier, the batch tier);
an idle head would still take some 0.04-0.08 of a core from the tiers after it, so none
is kept past the module that last wanted it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

import pytest

from hack.rayhead import RayHead, revive, start_ray_head
from operator_runtime.clients.dashboard import DashboardPool, Endpoint

__all__ = ["RayHead", "forget_jobs", "kept_head", "ray_head", "start_ray_head", "stop_unwanted"]

Head = TypeVar("Head")
_kept: dict[str, tuple[Any, Callable[[Any], None]]] = {}
"""This worker's heads between modules, by the fixture that hands them out: the head and
how to stop it."""
FORGET_TIMEOUT = 60.0
"""How long stopped jobs may take to finish before the head is stopped instead."""


def kept_head(
    fixture: str,
    start: Callable[[], Head],
    *,
    stop: Callable[[Head], None],
    reset: Callable[[Head], bool],
) -> Iterator[Head]:
    """The body of a module-scoped head fixture named ``fixture``: the head kept from the
    worker's module before (``reset`` to a fresh head's state first), or ``start()``; at
    the module's end it is kept for the next, or stopped if ``reset`` says it cannot be
    made fresh (it returns False, or it raises)."""
    kept = _kept.pop(fixture, None)
    head = kept[0] if kept else start()
    try:
        yield head
    finally:
        try:
            fresh = reset(head)
        except Exception as error:  # a dead or wedged head: the next module starts one
            print(f"\n{fixture}: not handed on ({error}); stopping it")
            fresh = False
        if fresh:
            _kept[fixture] = (head, stop)
        else:
            stop(head)


def stop_unwanted(wanted: Iterable[str]) -> None:
    """Stop each kept head whose fixture is not in ``wanted`` (a test's fixture names, or
    nothing at the session's end)."""
    names = set(wanted)
    for fixture in [name for name in _kept if name not in names]:
        head, stop = _kept.pop(fixture)
        stop(head)


def forget_jobs(head: RayHead) -> bool:
    """Stop the head's unfinished jobs and delete all of them, as on a new head: the next
    module's tests may list jobs, and a left-over ``sleep 600`` would hold its driver.
    False when they did not all finish within ``FORGET_TIMEOUT``."""
    if head.process.poll() is not None:
        return False
    deadline = time.monotonic() + FORGET_TIMEOUT
    with DashboardPool() as pool:
        dashboard = pool.dashboard(Endpoint(head.dashboard_url, deadline=10.0))
        # A driver that connected by itself has no submission id and cannot be deleted.
        while jobs := {job.submission_id: job.status for job in dashboard.list_jobs()
                       if job.submission_id}:  # fmt: skip
            for job_id, status in jobs.items():
                if status.is_terminal:
                    dashboard.delete_job(job_id)
                else:
                    dashboard.stop_job(job_id)
            if time.monotonic() > deadline:
                return False
            time.sleep(0.5)
    return True


def _started() -> RayHead:
    head = start_ray_head()
    print(f"\nRay head: dashboard answered {head.started_in:.1f} s after `ray start`")
    return head


@pytest.fixture(scope="module")
def module_ray_head() -> Iterator[RayHead]:
    yield from kept_head("module_ray_head", _started, stop=RayHead.stop, reset=forget_jobs)


@pytest.fixture
def ray_head(module_ray_head: RayHead) -> RayHead:
    """The module's head, started again first if Ray's processes died (``revive``)."""
    revive(module_ray_head)
    return module_ray_head
