"""``hack.rayhead.revive``: the tests' module-scoped Ray head is started again, on the same
dashboard port, when Ray's own processes died between tests; a live head is left alone.

It kills the head the worker hands from module to module (``tests/rayhead.py``), so that
what it revives is handed on as any head would be."""

from __future__ import annotations

import os
import signal

from hack.rayhead import gcs_healthy, revive
from tests.rayhead import RayHead, module_ray_head  # noqa: F401 (fixture)
from tests.waiting import wait_for

HEALTHY_SECONDS = 60.0
"""How long the revived head may take to say its GCS is healthy again. It said so once
before ``revive`` returned, but the dashboard answers 503 whenever its own check of the
GCS runs out of time, which a CI run saw right after the restart on two loaded cores."""


def test_a_dead_head_is_started_again_on_its_port_and_a_live_one_is_left_alone(
    module_ray_head: RayHead,  # noqa: F811
) -> None:
    head = module_ray_head
    assert revive(head) is False
    first, port = head.process.pid, head.dashboard_port
    os.killpg(head.process.pid, signal.SIGKILL)  # every process of `ray start`'s session
    head.process.wait(timeout=30)

    assert revive(head) is True
    assert head.process.pid != first
    assert head.dashboard_port == port
    wait_for(
        "the revived head's GCS healthy on its port",
        lambda: gcs_healthy(head.dashboard_url),
        timeout=HEALTHY_SECONDS,
        interval=1.0,
    )
