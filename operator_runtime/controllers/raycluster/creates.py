"""Worker pod creation: a budget per pass, and one queue of creates for the controller
that takes turns between groups.

A spec may ask for 2**31 - 1 replicas, so a pass hands at most ``POD_CREATES_PER_PASS``
creates to the queue (``take_budget``); the next pass hands over more once the cache
shows those pods. A group without pods has not shown that the API server accepts its
template, so its first create is a probe: the queue runs the rest of the group only once
it succeeded (a rejected template costs one request, as KubeRay's first create in its
pass does). The rest used to wait for the next pass instead, which made every new
cluster's workers take two rounds through the queue and a pass between them. A group
whose last create failed makes its next create in the pass itself, so another rejection
fails the pass and its retries back off.

The pass does not wait for its creates (``CreateQueue``). KubeRay's pass creates every
missing pod before it lets go of the worker, so with its default single worker a
1-worker cluster waits minutes behind one scale-up of hundreds (ray-project/kuberay#3909);
our earlier passes stopped after 0.1 s, which kept that wait short but left the API
server idle between passes. Here a pass takes milliseconds, the queue keeps
``MAX_IN_FLIGHT`` creates running at all times, and it serves its groups in turn, one
create each, so a small cluster's pods go out next to the big one's instead of after
them.

Nothing is lost between a pass and its creates:
- every queued create holds its group's expectations (``Expectations.expect_queued``)
  until it has run and recorded what it made, so no pass counts a queued pod as missing;
- a create runs only while its pass's view is still current (``wanted``: same cluster,
  same generation, not deleting or suspended); otherwise it and the rest of its group's
  queue are dropped, and the next pass works from the new spec;
- the first failure of a group stops its queue and is raised by the group's next pass
  (``take_failure``), which records it in the status as a failure in the pass would be;
  the group is then ``suspect`` until a probe succeeds, so a template that stops being
  accepted costs at most ``MAX_IN_FLIGHT`` requests before the retries back off;
- when a group has nothing queued or running any more, the queue says so (``on_idle``):
  that is the pass the group waits for, so it needs no timer to poll its own creates
  (a 2 s requeue per waiting cluster was half of all passes, benchmarks/README.md).
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final

from operator_runtime.controllers.raycluster.run import ClusterRun
from operator_runtime.runtime.expectations import Expectations

log = logging.getLogger(__name__)

MAX_IN_FLIGHT: Final = 4
"""Creates running at once, for all clusters together (the client's rate limiter still
applies on top). Four keep up with the default 100 requests/s at up to 40 ms a create;
with 16, the bursts of pod events made the API server drop kwok's watch for being slow
(benchmarks/README.md), where KubeRay creates one pod at a time."""


def take_budget(run: ClusterRun, wanted: int, *, pods_each: int = 1) -> int:
    """How many of ``wanted`` creations (of ``pods_each`` pods: a multi-host replica is
    created whole) this pass may do. A fresh budget always admits one, however large;
    when some must wait, the pass is marked for a quick requeue."""
    fits = max(1, run.create_budget // pods_each) if run.create_budget > 0 else 0
    allowed = max(0, min(wanted, fits))
    run.create_budget -= allowed * pods_each
    if allowed < wanted:
        run.more_to_create = True
        log.info(
            "%s: creating %d of %d missing pods in this pass; the rest follows",
            run.key,
            allowed * pods_each,
            wanted * pods_each,
        )
    return allowed


@dataclass(frozen=True, slots=True)
class _Create:
    call: Callable[[], None]
    wanted: Callable[[], bool]
    ticket: tuple[str, str]
    probe: bool
    """The group's other creates wait until this one has succeeded."""
    context: contextvars.Context
    """The submitting pass's context: the create's log lines carry its key and ID."""


class CreateQueue:
    """Creates of many groups, ``in_flight`` at a time, the groups served in turn.

    Threads are started when work arrives and end when the queue is empty, so an idle
    controller holds none."""

    def __init__(
        self,
        expectations: Expectations,
        *,
        in_flight: int = MAX_IN_FLIGHT,
        on_idle: Callable[[str], None] | None = None,
    ) -> None:
        self._expectations = expectations
        self._in_flight = in_flight
        self._on_idle = on_idle
        """Called with a group's key once it has nothing queued or running, after its
        last create settled its expectations (outside the lock)."""
        self._running: dict[str, int] = {}
        """Group key -> its creates running now."""
        self._cond = threading.Condition()
        self._queues: OrderedDict[str, deque[_Create]] = OrderedDict()
        """Group key -> its creates; the first group is served next, then goes last."""
        self._failures: dict[str, BaseException] = {}
        self._suspect: set[str] = set()
        """Groups whose last create failed: their next create is a probe in the pass."""
        self._probing: set[str] = set()
        """Groups whose probe runs now: nothing else of theirs starts until it succeeded."""
        self._threads = 0

    def submit(
        self,
        group: str,
        calls: Iterable[Callable[[], None]],
        *,
        wanted: Callable[[], bool],
        probe: bool = False,
    ) -> int:
        """Queue ``calls`` (creates of ``group``), each to run only while ``wanted()``;
        returns how many were queued. Each holds the group's expectations until it ran.
        With ``probe``, the first is a probe: the others start once it has succeeded."""
        expect = self._expectations.expect_queued
        creates = [
            _Create(call, wanted, expect(group), probe and index == 0, contextvars.copy_context())
            for index, call in enumerate(calls)
        ]
        if not creates:
            return 0
        with self._cond:
            self._queues.setdefault(group, deque()).extend(creates)
            self._start_threads()
        return len(creates)

    def _start_threads(self) -> None:
        """Enough threads for what is queued, up to ``in_flight`` (the lock is held)."""
        queued = sum(len(queue) for queue in self._queues.values())
        for _ in range(min(self._in_flight, queued) - self._threads):
            self._threads += 1
            threading.Thread(target=self._work, name="pod-create", daemon=True).start()

    def take_failure(self, group: str) -> BaseException | None:
        """The error that stopped ``group``'s queue since the last call, if any."""
        with self._cond:
            return self._failures.pop(group, None)

    def suspect(self, group: str) -> bool:
        """Whether ``group``'s last create failed (and no probe succeeded since)."""
        with self._cond:
            return group in self._suspect

    def accepted(self, group: str) -> None:
        """A create of ``group`` succeeded in the pass: queue its creates again."""
        with self._cond:
            self._suspect.discard(group)

    def prune(self, group: str) -> None:
        """Drop ``group``'s queued creates that are no longer wanted (a pass calls this
        before it looks at the group, so a new spec is acted on at once)."""
        with self._cond:
            queue = self._queues.get(group)
            if queue and not queue[0].wanted():
                self._drop(group)

    def queued(self, group: str) -> int:
        with self._cond:
            return len(self._queues.get(group, ()))

    def busy(self, group: str) -> bool:
        """Whether ``group`` has creates queued or running: its pass comes when they are
        done (``on_idle``), so its pods' events need not start one meanwhile."""
        with self._cond:
            return group in self._queues or group in self._running

    def busy_under(self, prefix: str) -> bool:
        """Whether any group whose key starts with ``prefix`` (``ns/cluster/``: any group
        of that cluster) is ``busy``."""
        with self._cond:
            return any(g.startswith(prefix) for g in (*self._queues, *self._running))

    def wait_idle(self, timeout: float) -> bool:
        """Wait until nothing is queued or running; whether that happened in time."""
        with self._cond:
            return self._cond.wait_for(lambda: self._threads == 0, timeout)

    def close(self, timeout: float = 10.0) -> None:
        """Drop every queued create and wait (up to ``timeout``) for those running: the
        operator is stopping, and its successor decides afresh from what exists."""
        with self._cond:
            for group in list(self._queues):
                self._drop(group)
        self.wait_idle(timeout)

    def _next(self) -> tuple[str, _Create] | None:
        """The next create to run: the first group's in turn, skipping groups whose
        probe runs (the thread that runs it takes their next one when it succeeds)."""
        group = next((g for g in self._queues if g not in self._probing), None)
        if group is None:
            return None
        queue = self._queues[group]
        create = queue.popleft()
        if queue:
            self._queues.move_to_end(group)
        else:
            del self._queues[group]
        if create.probe:
            self._probing.add(group)
        self._running[group] = self._running.get(group, 0) + 1
        return group, create

    def _drop(self, group: str) -> None:
        """Drop the rest of ``group``'s queue (the lock is held)."""
        for create in self._queues.pop(group, ()):
            self._expectations.settle_queued(group, create.ticket)

    def _work(self) -> None:
        while True:
            with self._cond:
                item = self._next()
                if item is None:
                    self._threads -= 1
                    self._cond.notify_all()
                    return
            group, create = item
            try:
                if create.wanted():
                    create.context.run(create.call)
                else:
                    with self._cond:
                        self._drop(group)
            except Exception as exc:  # the group's next pass raises it
                with self._cond:
                    self._failures.setdefault(group, exc)
                    self._suspect.add(group)
                    self._drop(group)
            finally:
                # After the create recorded its outcome (a named expectation, or an
                # unknown one), so the group never looks settled in between.
                self._expectations.settle_queued(group, create.ticket)
                with self._cond:
                    if create.probe:
                        self._probing.discard(group)
                        self._start_threads()  # threads that found only it held may be gone
                    left = self._running[group] - 1
                    if left:
                        self._running[group] = left
                    else:
                        del self._running[group]
                    idle = not left and group not in self._queues
                if idle and self._on_idle is not None:
                    try:
                        self._on_idle(group)
                    except Exception:  # a wake-up lost costs a resync, not the queue
                        log.exception("%s: the queue's wake-up failed", group)
