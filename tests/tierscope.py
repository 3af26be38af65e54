"""What one tier's session fixtures started, stopped as soon as a worker leaves the tier.

pytest ends a session-scoped fixture at the end of the session, and its ``package``
scope means the same here (the test directories are not packages). The real node's
control plane and node, and the e2e tier's control plane, each serve one tier that a
single worker runs as one block (``tests/conftest.py`` ``GROUPS``); kept to the end, each
idle control plane took some 10 % of a core from the other workers for the rest of the
run (three to five API servers at once on two cores, the CPU saturated throughout).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

_RUNNING: dict[Path, list[Callable[[], None]]] = {}
"""By tier directory, how to stop what its fixtures started and have not stopped."""


def stop_on_leaving(tier: Path, stop: Callable[[], None]) -> Callable[[], None]:
    """Have ``stop`` called when the worker's next test is outside ``tier`` (or there is
    none); returns what the fixture calls at its own end instead, which stops it only if
    that has not happened yet."""
    stopped = False

    def once() -> None:
        nonlocal stopped
        if not stopped:
            stopped = True
            stop()

    _RUNNING.setdefault(tier, []).append(once)
    return once


def left(test: Path, next_test: Path | None) -> None:
    """``test`` has ended and ``next_test`` runs next: stop each tier ``test`` is in and
    ``next_test`` is not, latest started first."""
    for tier in [t for t in _RUNNING if test.is_relative_to(t)]:
        if next_test is None or not next_test.is_relative_to(tier):
            for stop in reversed(_RUNNING.pop(tier)):
                stop()
