"""The dashboard client against a real Ray head: what the RayJob controller relies on.

Each test submits real entrypoints to the head of ``conftest.py`` and follows them the
way the controller does, by polling ``job_info``.
"""

from __future__ import annotations

import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator

import pytest

from hack import sandbox
from hack.localcluster.cluster import free_port
from hack.rayhead import RayHead
from operator_runtime.clients import (
    Addressing,
    DashboardClient,
    DashboardError,
    DashboardNotFound,
    DashboardPool,
    DashboardUnavailable,
    DuplicateSubmission,
    Endpoint,
    JobInfo,
    JobStatus,
    JobSubmission,
    dashboard_endpoint,
)

JOB_TIMEOUT = 90.0
"""The first job also starts the head's worker pool: 5-30 s on this machine."""


@pytest.fixture(scope="module")
def pool() -> Iterator[DashboardPool]:
    pool = DashboardPool()
    yield pool
    pool.close()


@pytest.fixture
def dashboard(ray_head: RayHead, pool: DashboardPool) -> DashboardClient:
    # Reads of logs and submits can take several seconds on a busy 2-core machine.
    return pool.dashboard(Endpoint(ray_head.dashboard_url, deadline=30))


def submission_id() -> str:
    return f"contract-{uuid.uuid4().hex[:10]}"


def wait_for(
    dashboard: DashboardClient, job_id: str, done: Callable[[JobInfo], bool]
) -> tuple[JobInfo, float]:
    started = time.monotonic()
    seen: list[JobStatus] = []
    while True:
        info = dashboard.job_info(job_id)
        if not seen or seen[-1] is not info.status:
            seen.append(info.status)
        if done(info):
            return info, time.monotonic() - started
        if time.monotonic() - started > JOB_TIMEOUT:
            raise TimeoutError(f"job {job_id} went {seen} and stopped there: {info}")
        time.sleep(0.5)


def test_a_job_runs_to_succeeded_and_keeps_its_logs(dashboard: DashboardClient) -> None:
    job_id = submission_id()
    started = time.monotonic()
    submitted = dashboard.submit_job(
        JobSubmission(
            entrypoint="python -c \"print('hello')\"",
            submission_id=job_id,
            metadata={"ray.io/test": "contract"},
            runtime_env={"env_vars": {"GREETING": "hello"}},
        )
    )
    assert submitted.submission_id == job_id
    info, _ = wait_for(dashboard, job_id, lambda info: info.status.is_terminal)
    print(f"\nhello job: submit -> {info.status} in {time.monotonic() - started:.1f} s")
    assert info.status is JobStatus.SUCCEEDED, info
    assert info.metadata == {"ray.io/test": "contract"}
    assert info.start_time and info.end_time and info.end_time >= info.start_time
    assert "hello" in dashboard.job_logs(job_id).splitlines()
    assert job_id in {job.submission_id for job in dashboard.list_jobs()}

    assert dashboard.delete_job(job_id) is True
    with pytest.raises(DashboardNotFound):
        dashboard.job_info(job_id)


def test_a_failing_entrypoint_reaches_failed(dashboard: DashboardClient) -> None:
    job_id = submission_id()
    dashboard.submit_job(
        JobSubmission(entrypoint='python -c "import sys; sys.exit(3)"', submission_id=job_id)
    )
    info, took = wait_for(dashboard, job_id, lambda info: info.status.is_terminal)
    print(f"\nfailing job: FAILED after {took:.1f} s")
    assert info.status is JobStatus.FAILED, info
    assert info.driver_exit_code == 3
    assert info.message and "3" in info.message


def test_a_long_job_is_stopped(dashboard: DashboardClient) -> None:
    job_id = submission_id()
    dashboard.submit_job(JobSubmission(entrypoint="sleep 600", submission_id=job_id))
    wait_for(dashboard, job_id, lambda info: info.status is JobStatus.RUNNING)

    with pytest.raises(DashboardError) as refused:
        dashboard.delete_job(job_id)  # the head keeps a running job
    assert type(refused.value) is DashboardError

    assert dashboard.stop_job(job_id) is True
    info, took = wait_for(dashboard, job_id, lambda info: info.status.is_terminal)
    print(f"\nsleep job: STOPPED {took:.1f} s after the stop")
    assert info.status is JobStatus.STOPPED, info
    assert dashboard.stop_job(job_id) is False  # already finished: nothing to stop


def test_a_taken_submission_id_is_a_duplicate(dashboard: DashboardClient) -> None:
    job = JobSubmission(entrypoint="python -c \"print('once')\"", submission_id=submission_id())
    dashboard.submit_job(job)
    with pytest.raises(DuplicateSubmission) as caught:
        dashboard.submit_job(job)
    assert caught.value.status_code == 500


def test_an_unknown_id_is_not_found_everywhere(dashboard: DashboardClient) -> None:
    unknown = submission_id()
    calls: list[Callable[[str], object]] = [
        dashboard.job_info,
        dashboard.job_logs,
        dashboard.stop_job,
        dashboard.delete_job,
    ]
    for call in calls:
        with pytest.raises(DashboardNotFound) as caught:
            call(unknown)
        assert caught.value.status_code == 404


def test_direct_addressing_reaches_the_head_by_service_name(
    ray_head: RayHead, pool: DashboardPool
) -> None:
    name = "contract-head-svc.ray-system.svc.cluster.local"
    sandbox.add_host(name, "127.0.0.1")
    try:
        endpoint = dashboard_endpoint(
            addressing=Addressing.DIRECT,
            head_service="contract-head-svc",
            namespace="ray-system",
            port=ray_head.dashboard_port,
        )
        assert endpoint.base_url == f"http://{name}:{ray_head.dashboard_port}"
        assert isinstance(pool.dashboard(endpoint).list_jobs(), list)
    finally:
        sandbox.remove_host(name)


def test_a_closed_port_is_unavailable_at_once(pool: DashboardPool) -> None:
    endpoint = Endpoint(f"http://127.0.0.1:{free_port()}", deadline=2)
    started = time.monotonic()
    with pytest.raises(DashboardUnavailable) as caught:
        pool.dashboard(endpoint).job_info("any")
    took = time.monotonic() - started
    print(f"\nclosed port: DashboardUnavailable after {took * 1000:.0f} ms")
    assert caught.value.status_code is None
    assert took < endpoint.deadline


def test_a_silent_dashboard_is_unavailable_at_the_deadline(pool: DashboardPool) -> None:
    # A head that accepts the connection and never answers (a hung dashboard process).
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        accepted: list[socket.socket] = []
        acceptor = threading.Thread(target=lambda: accepted.append(listener.accept()[0]))
        acceptor.start()
        endpoint = Endpoint(f"http://127.0.0.1:{listener.getsockname()[1]}", deadline=1)
        started = time.monotonic()
        try:
            with pytest.raises(DashboardUnavailable, match="ReadTimeout"):
                pool.dashboard(endpoint).job_info("any")
        finally:
            took = time.monotonic() - started
            acceptor.join(timeout=5)
            for conn in accepted:
                conn.close()
    print(f"\nsilent dashboard: DashboardUnavailable after {took:.2f} s")
    assert endpoint.deadline <= took < endpoint.deadline + 1.0
