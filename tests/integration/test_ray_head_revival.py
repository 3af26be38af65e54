"""``hack.rayhead.revive``: the tests' module-scoped Ray head is started again, on the same
dashboard port, when Ray's own processes died between tests; a live head is left alone,
and a dead one's job drivers do not outlive it.

It kills the head the worker hands from module to module (``tests/rayhead.py``), so that
what it revives is handed on as any head would be."""

from __future__ import annotations

import os
import signal

from hack import processes
from hack.rayhead import HEAD_MARK, gcs_healthy, revive
from operator_runtime.clients.dashboard import DashboardPool, Endpoint
from operator_runtime.clients.models import JobSubmission
from tests.rayhead import RayHead, module_ray_head  # noqa: F401 (fixture)
from tests.waiting import wait_for

HEALTHY_SECONDS = 60.0
"""How long the revived head may take to say its GCS is healthy again. It said so once
before ``revive`` returned, but the dashboard answers 503 whenever its own check of the
GCS runs out of time, which a CI run saw right after the restart on two loaded cores."""


DRIVER = 'python -c "import time; time.sleep(600)"'
"""A job whose driver outlives the test unless the head's stop ends it."""
SUBMIT_TIMEOUT = 60.0
"""How long the head may take to answer the submission (it starts the job's supervisor)."""
DRIVER_TIMEOUT = 120.0
"""How long the job's driver may take to start: Ray starts a supervisor actor first."""


def drivers(temp_dir: str) -> list[int]:
    """The running job drivers of the head whose temp dir is ``temp_dir``."""
    return [
        pid
        for pid in processes.inheriting(HEAD_MARK, temp_dir)
        if processes.command_line(pid).startswith("python -c import time")
    ]


def test_a_dead_head_is_started_again_on_its_port_and_its_driver_ended_a_live_one_left_alone(
    module_ray_head: RayHead,  # noqa: F811
) -> None:
    head = module_ray_head
    assert revive(head) is False
    with DashboardPool() as pool:
        dashboard = pool.dashboard(Endpoint(head.dashboard_url, deadline=SUBMIT_TIMEOUT))
        dashboard.submit_job(JobSubmission(entrypoint=DRIVER))
    dead_dir = str(head.temp_dir)
    wait_for("the job's driver running", lambda: drivers(dead_dir), timeout=DRIVER_TIMEOUT)
    first, port = head.process.pid, head.dashboard_port
    # Every process of `ray start`'s session, Ray's watcher of the driver among them; the
    # driver, in a session of its own, lives on.
    os.killpg(head.process.pid, signal.SIGKILL)
    head.process.wait(timeout=30)

    assert revive(head) is True
    assert drivers(dead_dir) == []
    assert head.process.pid != first
    assert head.dashboard_port == port
    wait_for(
        "the revived head's GCS healthy on its port",
        lambda: gcs_healthy(head.dashboard_url),
        timeout=HEALTHY_SECONDS,
        interval=1.0,
    )
