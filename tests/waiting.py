"""The tests' one way to wait for a condition on the control plane or a Ray head."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

REPORTED_SECONDS = 2.0
"""A wait this long or longer is printed with its length: a slow test's captured output
(shown when it fails, or in the JUnit file with ``-o junit_logging=system-out``) says
where its time went."""


def wait_for(
    what: str,
    condition: Callable[[], Any],
    timeout: float = 30.0,
    interval: float = 0.1,
    *,
    explain: Callable[[], object] | None = None,
) -> Any:
    """Poll ``condition`` every ``interval`` seconds until it returns something truthy,
    and return that; after ``timeout`` seconds fail naming ``what``, with what
    ``explain`` (if given) shows of the state it was stuck in."""
    started = time.monotonic()
    deadline = started + timeout
    while True:
        value = condition()
        if value:
            waited = time.monotonic() - started
            if waited >= REPORTED_SECONDS:
                print(f"waited {waited:.1f} s for {what}", flush=True)
            return value
        if time.monotonic() > deadline:
            seen = f"; last seen: {explain()}" if explain is not None else ""
            raise AssertionError(f"timed out after {timeout}s waiting for {what}{seen}")
        time.sleep(interval)
