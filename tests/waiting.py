"""The tests' one way to wait for a condition on the control plane or a Ray head."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

REPORTED_SECONDS = 2.0
"""A wait this long or longer is printed with its length: a slow test's captured output
(shown when it fails, or in the JUnit file with ``-o junit_logging=system-out``) says
where its time went."""


_ALSO_SEEN: list[Callable[[], str]] = []
"""What every timeout also reports (``report_also``), until ``stop_reporting``."""


def report_also(source: Callable[[], str]) -> None:
    """From now on, a wait that times out also says what ``source`` returns (one line:
    CI shows of a failure little more than the line naming it)."""
    _ALSO_SEEN.append(source)


def stop_reporting(source: Callable[[], str]) -> None:
    """Undo ``report_also``; nothing if the test's end dropped ``source`` already."""
    with contextlib.suppress(ValueError):
        _ALSO_SEEN.remove(source)


@contextlib.contextmanager
def one_tests_sources() -> Iterator[None]:
    """Around one test: the sources it registered and never let go of (an operator it
    killed instead of leaving its block) are dropped after it, so they speak in no
    later test's timeout; those registered before it (a module's) stay."""
    before = list(_ALSO_SEEN)
    try:
        yield
    finally:
        _ALSO_SEEN[:] = before


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
            also = "".join(f"; {source()}" for source in _ALSO_SEEN)
            raise AssertionError(f"timed out after {timeout}s waiting for {what}{seen}{also}")
        time.sleep(interval)
