"""Stopping a child process the way every harness here does: SIGTERM, a grace period for
it to finish what it was doing (an operator releasing its lease, Kueue its webhooks), then
SIGKILL."""

from __future__ import annotations

import subprocess
from typing import Any

KILLED_WAIT = 30.0
"""Seconds a SIGKILLed process may take to be reaped (it cannot refuse; a bound all the
same)."""


def stop(process: subprocess.Popen[Any], grace: float) -> int:
    """Stop ``process`` if it still runs (SIGTERM, ``grace`` seconds, SIGKILL) and reap it;
    its exit status."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=KILLED_WAIT)
    return process.returncode
