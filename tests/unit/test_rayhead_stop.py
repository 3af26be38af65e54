"""``RayHead.stop`` when `ray start` ignores SIGTERM past its grace: it is killed and
reaped, so no Popen is left to warn "still running" in a later test (a fresh-clone run
failed a RayService module's setup on that warning)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from hack.rayhead import RayHead

STUBBORN = (
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "print('ignoring', flush=True); time.sleep(120)"
)


def test_a_head_that_ignores_sigterm_is_killed_and_reaped(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", STUBBORN], stdout=subprocess.PIPE, start_new_session=True
    )
    assert process.stdout is not None
    assert process.stdout.readline() == b"ignoring\n"  # SIGTERM is ignored from here on
    process.stdout.close()
    head = RayHead(process, tmp_path / "ray", dashboard_port=1, started_in=0.0)
    head.stop(grace=0.5)
    assert process.returncode is not None, "stop() left the process unreaped"
    assert process.returncode < 0  # killed by a signal, not exited by itself
