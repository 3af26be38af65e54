"""``hack.rayhead.revive``: the tests' module-scoped Ray head is started again, on the same
dashboard port, when Ray's own processes died between tests; a live head is left alone."""

from __future__ import annotations

import os
import signal

import httpx

from hack.rayhead import revive, start_ray_head


def test_a_dead_head_is_started_again_on_its_port_and_a_live_one_is_left_alone() -> None:
    head = start_ray_head()
    try:
        assert revive(head) is False
        first = head.process.pid
        os.killpg(head.process.pid, signal.SIGKILL)  # every process of `ray start`'s session
        head.process.wait(timeout=30)

        assert revive(head) is True
        assert head.process.pid != first
        answer = httpx.get(f"{head.dashboard_url}/api/gcs_healthz", timeout=10)
        assert answer.status_code == 200 and "success" in answer.text
    finally:
        head.stop()
