"""Time, injected: every component that waits or measures takes a ``Clock``.

Production code uses ``SystemClock``; unit tests use ``FakeClock`` and move time by hand,
so backoff, expectation timeouts and event aggregation are tested without sleeping.
Waiting for *work* (a condition variable, a stop event) still uses real time: a fake
clock only decides what is due, never how long a thread blocks.
"""

from __future__ import annotations

import datetime
import threading
import time
from typing import Protocol


class Clock(Protocol):
    """The two notions of time the runtime needs."""

    def monotonic(self) -> float:
        """Seconds on a clock that never jumps; for durations and deadlines."""
        ...

    def now(self) -> datetime.datetime:
        """Wall-clock time (UTC), for timestamps written to the API server."""
        ...


class SystemClock:
    """The real clock."""

    def monotonic(self) -> float:
        return time.monotonic()

    def now(self) -> datetime.datetime:
        return datetime.datetime.now(datetime.UTC)


class FakeClock:
    """A clock that only moves when a test calls ``advance``; thread-safe."""

    def __init__(self, start: float = 1000.0) -> None:
        self._lock = threading.Lock()
        self._monotonic = start
        self._wall = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)

    def monotonic(self) -> float:
        with self._lock:
            return self._monotonic

    def now(self) -> datetime.datetime:
        with self._lock:
            return self._wall

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._monotonic += seconds
            self._wall += datetime.timedelta(seconds=seconds)


def later(moment: datetime.datetime, seconds: float) -> datetime.datetime:
    """``moment`` plus ``seconds``, held at the calendar's end (or start) where Python's
    datetime would raise ``OverflowError``: a deadline past year 9999 is simply never
    reached, and a time read from a status cannot make every pass raise."""
    try:
        return moment + datetime.timedelta(seconds=seconds)
    except OverflowError:
        edge = datetime.datetime.max if seconds > 0 else datetime.datetime.min
        return edge.replace(tzinfo=datetime.UTC if moment.tzinfo else None)


def format_micro_time(moment: datetime.datetime) -> str:
    """RFC 3339 with microseconds, the ``MicroTime`` format of Leases and Events."""
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(value: object) -> datetime.datetime | None:
    """A time the API server wrote (RFC 3339, ``Z`` or an offset) as an aware datetime;
    None for an unset one. Raises ``ValueError`` for text that is not a time."""
    if not isinstance(value, str) or not value:
        return None
    moment = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.UTC)


def format_time(moment: datetime.datetime) -> str:
    """RFC 3339 to the second, the ``Time`` format of core/v1 Event timestamps."""
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
