"""``hack.processes.stop``: SIGTERM, the grace period, then SIGKILL; always reaped."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

from hack import processes

IGNORES_SIGTERM = (
    "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "print('ready', flush=True); time.sleep(60)"
)


def test_a_process_that_stops_on_sigterm_is_not_killed() -> None:
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    assert processes.stop(process, grace=30) == -signal.SIGTERM


def test_a_process_that_ignores_sigterm_is_killed_after_the_grace() -> None:
    process = subprocess.Popen([sys.executable, "-c", IGNORES_SIGTERM], stdout=subprocess.PIPE)
    assert process.stdout is not None and process.stdout.readline() == b"ready\n"
    started = time.monotonic()
    assert processes.stop(process, grace=0.5) == -signal.SIGKILL
    assert time.monotonic() - started >= 0.5
    process.stdout.close()


def test_a_finished_process_keeps_its_exit_status() -> None:
    process = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    process.wait(timeout=30)
    assert processes.stop(process, grace=1) == 3
