"""The tests' real Ray head (``hack/rayhead.py``) and the module-scoped fixture the
tiers that need one import into their conftest:

    from tests.rayhead import module_ray_head, ray_head  # noqa: F401 (fixtures)

A module gets the head its worker kept from the module before, or a new one
(``tests/kept.py``). Between modules a head is handed on, its jobs stopped and deleted
(``forget_jobs``) and, after a module that ran Serve on it, Serve shut down (``serving``),
while the worker's next module wants one; the root conftest stops it before the first
test that does not and runs the modules that want one in a stretch of their own, so that
a worker goes from one to the next with its head, and its keeper (``ray_head_keeper``)
stops it at the session's end. Jobs and Serve modules share the one kind of head: every
head has the worker's app directory on its path (``app_dir``). Starting a head costs some
12 CPU-s and stopping it 4 (``ray start``, the dashboard's module processes); an idle
head would still take some 0.09 of a core from the modules after it, so none is kept
past the module that last wanted it.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from hack.rayhead import RayHead, revive, start_ray_head
from operator_runtime.clients.dashboard import DashboardPool, Endpoint
from tests.kept import Keeper

__all__ = ["RayHead", "app_dir", "forget_jobs", "ray_head", "serving", "start_ray_head"]

FORGET_TIMEOUT = 60.0
"""How long stopped jobs may take to finish before the head is stopped instead."""


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


@contextlib.contextmanager
def serving(head: RayHead, port: int) -> Iterator[None]:
    """The block of a module that runs Serve on the kept ``head``, its proxy on ``port``:
    after it Serve is shut down (``serve.shutdown()``) and the port let go of, so the
    next module begins on what a new head shows; if that fails, the head is stopped, and
    a stopped head is not handed on (``forget_jobs``)."""
    try:
        yield
    finally:
        try:
            _shut_serve_down(head, port)
        except Exception as error:
            print(f"\nServe on the head of :{head.dashboard_port} not shut down ({error})")
            head.stop()


def _shut_serve_down(head: RayHead, port: int) -> None:
    # Plain HTTP: no TLS context (reading the CA bundle) for a client of one request.
    with httpx.Client(base_url=head.dashboard_url, timeout=60.0, verify=False) as client:
        client.delete("/api/serve/applications/").raise_for_status()
    deadline = time.monotonic() + FORGET_TIMEOUT
    while _listens(port):
        if time.monotonic() > deadline:
            raise TimeoutError(f"Serve's proxy still listens on :{port}")
        time.sleep(0.5)


def _listens(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def app_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The worker's directory of Ray apps (Serve's import paths), on every head's
    ``PYTHONPATH``: a module writes its app here, and the kept head, whichever module
    started it, imports it."""
    code = tmp_path_factory.getbasetemp() / "ray-apps"
    code.mkdir(exist_ok=True)
    return code


@pytest.fixture(scope="module")
def module_ray_head(
    ray_head_keeper: Keeper[RayHead], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RayHead]:
    """The worker's one kind of kept head, for jobs and Serve alike (a Serve module adds
    its port and app on top: ``tests/integration/rayservice/conftest.py``)."""
    code = app_dir(tmp_path_factory)

    def start() -> RayHead:
        head = start_ray_head({"PYTHONPATH": str(code)})
        print(f"\nRay head: dashboard answered {head.started_in:.1f} s after `ray start`")
        return head

    yield from ray_head_keeper.kept(start, stop=RayHead.stop, reset=forget_jobs)


@pytest.fixture
def ray_head(module_ray_head: RayHead) -> RayHead:
    """The module's head, started again first if Ray's processes died (``revive``)."""
    revive(module_ray_head)
    return module_ray_head
