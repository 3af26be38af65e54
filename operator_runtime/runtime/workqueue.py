"""The work queue between event handlers and reconcilers (client-go's semantics).

- **Deduplicating**: a key waiting in the queue is stored once, however often it is
  added; reconcilers are level-triggered, so one pass covers every event before it.
- **One worker per key**: a key being processed is not handed out again. Added again
  meanwhile, it is marked dirty and re-queued when ``done`` is called, so the change
  that arrived mid-reconcile is never lost.
- **Fair**: plain FIFO plus the two rules above; a re-added key goes to the tail, so a
  hot key takes at most one slot per pass and a slow key holds at most one worker.
- **Triggers**: each add names its source (an event of a watched kind, a requeue, a
  retry); ``on_trigger`` hears the source of every add that will cause a pass (one not
  absorbed by a key already waiting), so passes can be counted by what started them.
- **Delays**: ``add_after`` for ``requeue_after``; ``add_rate_limited`` for errors: the
  longer of a per-key exponential backoff (5 ms doubling to 1000 s, reset by ``forget``)
  and a token bucket shared by all the queue's keys (10 per second, burst 100), as
  client-go's default controller rate limiter does for KubeRay. Without the bucket, many
  keys failing together each retry as fast as their own backoff allows (100 RayServices
  whose dashboards never answer made 2.6x KubeRay's reconciles).

Time comes from an injected clock; only blocking waits use real time.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable
from typing import Generic, Protocol, TypeVar

from operator_runtime.runtime.clock import Clock, SystemClock
from operator_runtime.runtime.ratelimit import TokenBucket

K = TypeVar("K", bound=Hashable)

# client-go's DefaultTypedControllerRateLimiter: the overall bucket only paces retries.
RETRIES_PER_SECOND = 10.0
RETRY_BURST = 100


class QueueMetrics(Protocol):
    def added(self) -> None: ...
    def depth(self, depth: int) -> None: ...
    def retried(self) -> None: ...
    def waited(self, seconds: float) -> None: ...
    def worked(self, seconds: float) -> None: ...


class _NoMetrics:
    def added(self) -> None:
        pass

    def depth(self, depth: int) -> None:
        pass

    def retried(self) -> None:
        pass

    def waited(self, seconds: float) -> None:
        pass

    def worked(self, seconds: float) -> None:
        pass


class ExponentialBackoff(Generic[K]):
    """Per-key failure counting: ``base * 2**failures``, capped."""

    def __init__(self, base: float = 0.005, cap: float = 1000.0) -> None:
        self.base = base
        self.cap = cap
        self._failures: dict[K, int] = {}

    def next_delay(self, key: K) -> float:
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        # Exponent bounded so the float never overflows for a key failing for days.
        return min(self.base * 2.0 ** min(failures, 64), self.cap)

    def forget(self, key: K) -> None:
        self._failures.pop(key, None)

    def failures(self, key: K) -> int:
        return self._failures.get(key, 0)


class WorkQueue(Generic[K]):
    """A deduplicating, delaying, rate-limited FIFO of keys; thread-safe."""

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        backoff: ExponentialBackoff[K] | None = None,
        metrics: QueueMetrics | None = None,
        on_trigger: Callable[[str], None] | None = None,
    ) -> None:
        self._clock = clock or SystemClock()
        self._backoff: ExponentialBackoff[K] = backoff or ExponentialBackoff()
        # One bucket per queue, i.e. per controller, like controller-runtime's.
        self._retries = TokenBucket(RETRIES_PER_SECOND, RETRY_BURST, clock=self._clock)
        self._metrics: QueueMetrics = metrics or _NoMetrics()
        self._cond = threading.Condition()
        self._queue: deque[K] = deque()
        self._dirty: set[K] = set()
        self._processing: dict[K, float] = {}
        self._added_at: dict[K, float] = {}
        self._waiting: list[tuple[float, int, K]] = []  # heap of (due, seq, key)
        self._due: dict[K, float] = {}
        self._due_source: dict[K, str] = {}
        self._on_trigger = on_trigger
        self._seq = itertools.count()
        self._shutting_down = False

    # -- intake -----------------------------------------------------------------------

    def add(self, key: K, source: str = "add") -> None:
        with self._cond:
            self._add_locked(key, source)

    def add_after(self, key: K, delay: float, source: str = "requeue_after") -> None:
        """Add ``key`` once ``delay`` seconds have passed; the earliest due time wins."""
        if delay <= 0:
            self.add(key, source)
            return
        with self._cond:
            if self._shutting_down:
                return
            due = self._clock.monotonic() + delay
            if key in self._due and self._due[key] <= due:
                return
            self._due[key] = due
            self._due_source[key] = source
            heapq.heappush(self._waiting, (due, next(self._seq), key))
            self._cond.notify()

    def cancel_after(self, key: K, source: str) -> None:
        """Drop ``key``'s delayed add if ``source`` set it (the earliest due time is the
        one kept, so it is the only one pending): a pass that has just started reads
        what that timer was to make it look at."""
        with self._cond:
            if key in self._due and self._due_source.get(key) == source:
                del self._due[key]  # its heap entry is skipped as superseded
                del self._due_source[key]

    def add_rate_limited(self, key: K, source: str = "retry") -> float:
        """Re-add after the longer of the key's next backoff delay and the queue's next
        retry slot; return that delay. Both are always taken (client-go's MaxOf asks
        every limiter), so a retry spends a token even when its backoff is longer."""
        with self._cond:
            delay = max(self._backoff.next_delay(key), self._retries.reserve())
        self._metrics.retried()
        self.add_after(key, delay, source)
        return delay

    def forget(self, key: K) -> None:
        """The key succeeded: reset its backoff."""
        with self._cond:
            self._backoff.forget(key)

    def num_requeues(self, key: K) -> int:
        with self._cond:
            return self._backoff.failures(key)

    def _add_locked(self, key: K, source: str) -> None:
        if self._shutting_down or key in self._dirty:
            return
        if self._on_trigger is not None:
            self._on_trigger(source)
        self._metrics.added()
        self._dirty.add(key)
        self._added_at.setdefault(key, self._clock.monotonic())
        if key in self._processing:
            return  # re-queued by done()
        self._queue.append(key)
        self._metrics.depth(len(self._queue))
        self._cond.notify()

    # -- handing out work -------------------------------------------------------------

    def get(self, block: bool = True) -> K | None:
        """The next key, marked as processing; None when shut down (or empty and not
        blocking). Every key returned must be passed to ``done``."""
        with self._cond:
            while True:
                next_due = self._promote_due()
                if self._queue:
                    key = self._queue.popleft()
                    self._dirty.discard(key)
                    now = self._clock.monotonic()
                    self._processing[key] = now
                    self._metrics.waited(now - self._added_at.pop(key, now))
                    self._metrics.depth(len(self._queue))
                    return key
                if self._shutting_down or not block:
                    return None
                # Wake for a delayed key coming due; re-check at least every second so
                # a fake clock moved by a test is noticed too.
                timeout = 1.0 if next_due is None else min(max(next_due, 0.001), 1.0)
                self._cond.wait(timeout)

    def done(self, key: K) -> None:
        with self._cond:
            started = self._processing.pop(key, None)
            if started is not None:
                self._metrics.worked(self._clock.monotonic() - started)
            if key in self._dirty and not self._shutting_down:
                self._queue.append(key)
                self._metrics.depth(len(self._queue))
                self._cond.notify()
            if not self._processing:
                self._cond.notify_all()  # wake wait_idle

    def _promote_due(self) -> float | None:
        """Move due delayed keys into the queue; return seconds until the next one."""
        now = self._clock.monotonic()
        while self._waiting:
            due, _, key = self._waiting[0]
            if self._due.get(key) != due:
                heapq.heappop(self._waiting)  # superseded by an earlier due time
                continue
            if due > now:
                return due - now
            heapq.heappop(self._waiting)
            del self._due[key]
            self._add_locked(key, self._due_source.pop(key, "requeue_after"))
        return None

    # -- shutdown ---------------------------------------------------------------------

    def shut_down(self) -> None:
        """Stop intake and wake all workers; keys not yet handed out are dropped
        (level-triggered: whoever runs next relists and sees them again)."""
        with self._cond:
            self._shutting_down = True
            self._queue.clear()
            self._waiting.clear()
            self._due.clear()
            self._due_source.clear()
            self._cond.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        """After ``shut_down``: wait for in-flight keys to be ``done`` (drain)."""
        deadline = time.monotonic() + timeout  # a blocking wait: real time
        with self._cond:
            while self._processing:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(min(remaining, 0.1))
            return True

    def __len__(self) -> int:
        with self._cond:
            return len(self._queue)
