"""Scale expectations: do not act on a group again until the cache has caught up.

After a reconciler creates or deletes pods, its cache does not show the change until
the watch event arrives. Acting on that stale view again would create duplicate pods,
or re-create pods it just deleted (KubeRay's 5 -> 4 scale-down bug). So each create or
delete is recorded under a group key (e.g. ``ns/cluster/group``) and
``is_satisfied(group)`` stays false until the cache reflects every recorded item:
a created object has been seen (it is in the cache, even if already on its way out,
or its deletion has been observed), a deleted one is gone or carries a deletion
timestamp (as the ReplicaSet controller takes it: a pod stuck Terminating on a lost
node must not hold its group). An item also counts as satisfied after ``timeout``
seconds, so a lost event or a create the API server rejected later cannot block the
group forever.

The timeout must outlast the slowest way an event can arrive: a watch that stalls
silently is only noticed after the informer's inactivity timeout (70 s), and then a
relist may follow. KubeRay's 30 s is shorter than that, so a create event held up by a
stalled watch timed out into a duplicate pod; ``timeout_for(inactivity)`` is that
stall detection plus ``RELIST_ALLOWANCE``.

A create whose outcome is unknown (``OutcomeUnknown``: a 504, a timeout after sending)
has no name to wait for, so ``expect_unknown`` blocks the whole group until the caller
has looked with a fresh LIST (``resolve_unknown``, which turns what it found into
named create expectations) or the timeout passes.

A create handed to a queue in this process (``expect_queued``) has no name yet either;
it blocks its group until the queue settles it (``settle_queued``), after the create
recorded its outcome. It never lapses: no event can be lost on the way, and a long
queue must not look like a finished one.

This mirrors KubeRay's ``scale_expectations.go`` (named items, checked against the
cache) rather than client-go's add/delete counters, because names make a missed or
duplicated event harmless.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Final

from operator_runtime.runtime.clock import Clock, SystemClock
from operator_runtime.runtime.informer import WATCH_INACTIVITY_TIMEOUT
from operator_runtime.runtime.kinds import Object, being_deleted

RELIST_ALLOWANCE: Final = 30.0
"""Seconds a relist after a stalled watch may take before its events are in the cache."""


def timeout_for(watch_inactivity_timeout: float) -> float:
    """The shortest safe expectation timeout for informers with this stall detection."""
    return watch_inactivity_timeout + RELIST_ALLOWANCE


DEFAULT_TIMEOUT: Final = timeout_for(WATCH_INACTIVITY_TIMEOUT)

Lookup = Callable[[str, str], Object | None]
"""(namespace, name) -> the object as the cache holds it now, or None."""


class Action(Enum):
    CREATE = "create"
    DELETE = "delete"
    UNKNOWN = "unknown"
    """A create that may or may not have happened; satisfied only by a look or time."""
    QUEUED = "queued"
    """A create waiting in (or running from) a queue of this process; settled by it."""


_UNKNOWN_KEY: Final = ("", "")


@dataclass(frozen=True)
class _Item:
    namespace: str
    name: str
    action: Action
    recorded_at: float


class Expectations:
    """Per-group create/delete expectations; thread-safe."""

    def __init__(self, *, clock: Clock | None = None, timeout: float = DEFAULT_TIMEOUT) -> None:
        self._clock = clock or SystemClock()
        self.timeout = timeout
        self._lock = threading.Lock()
        self._groups: dict[str, dict[tuple[str, str], _Item]] = {}
        self._tickets = itertools.count()

    def expect_create(self, group: str, namespace: str, name: str) -> None:
        self._record(group, namespace, name, Action.CREATE)

    def expect_delete(self, group: str, namespace: str, name: str) -> None:
        self._record(group, namespace, name, Action.DELETE)

    def expect_unknown(self, group: str) -> None:
        """A create in ``group`` may have happened: block the group until
        ``resolve_unknown`` (after a fresh LIST) or the timeout."""
        self._record(group, "", "", Action.UNKNOWN)

    def expect_queued(self, group: str) -> tuple[str, str]:
        """A create of ``group`` is queued: block the group until ``settle_queued``
        with the returned ticket (which the create's own outcome must precede)."""
        ticket = ("", f"queued-{next(self._tickets)}")
        self._record(group, *ticket, Action.QUEUED)
        return ticket

    def settle_queued(self, group: str, ticket: tuple[str, str]) -> None:
        with self._lock:
            items = self._groups.get(group)
            if items is not None and items.pop(ticket, None) is not None and not items:
                del self._groups[group]

    def has_unknown(self, group: str) -> bool:
        with self._lock:
            return _UNKNOWN_KEY in self._groups.get(group, {})

    def resolve_unknown(
        self, group: str, listed: Iterable[tuple[str, str]], lookup: Lookup
    ) -> None:
        """A fresh LIST returned ``listed`` (namespace, name) for the group: every one
        the cache does not show yet becomes a create expectation, and the unknown goes."""
        now = self._clock.monotonic()
        with self._lock:
            items = self._groups.setdefault(group, {})
            items.pop(_UNKNOWN_KEY, None)
            for namespace, name in listed:
                if lookup(namespace, name) is None:
                    items[(namespace, name)] = _Item(namespace, name, Action.CREATE, now)
            if not items:
                del self._groups[group]

    def _record(self, group: str, namespace: str, name: str, action: Action) -> None:
        item = _Item(namespace, name, action, self._clock.monotonic())
        with self._lock:
            self._groups.setdefault(group, {})[(namespace, name)] = item

    def observe_gone(self, namespace: str, name: str) -> None:
        """The cache saw ``namespace/name`` deleted, so a create of it is reflected even
        if no check ever found it present (created and deleted between two passes)."""
        key = (namespace, name)
        with self._lock:
            for group, items in list(self._groups.items()):
                item = items.get(key)
                if item is not None and item.action is Action.CREATE:
                    del items[key]
                    if not items:
                        del self._groups[group]

    def is_satisfied(self, group: str, lookup: Lookup) -> bool:
        """True when every item of ``group`` is reflected in the cache or timed out.

        Satisfied items are forgotten; the rest are kept for the next check.
        """
        now = self._clock.monotonic()
        with self._lock:
            items = self._groups.get(group)
            if not items:
                return True
            pending = {
                key: item for key, item in items.items()
                if not self._item_satisfied(item, lookup, now)
            }  # fmt: skip
            if pending:
                self._groups[group] = pending
                return False
            del self._groups[group]
            return True

    def _item_satisfied(self, item: _Item, lookup: Lookup, now: float) -> bool:
        if item.action is Action.QUEUED:
            return False
        if now - item.recorded_at >= self.timeout:
            return True
        if item.action is Action.UNKNOWN:
            return False
        cached = lookup(item.namespace, item.name)
        if item.action is Action.CREATE:
            return cached is not None
        return cached is None or being_deleted(cached)

    def lapses_in(self, group: str) -> float | None:
        """Seconds until the first of ``group``'s items that can time out does (0 if one
        already has), None if it has none: a queued create never lapses, its queue
        reports when it is done."""
        now = self._clock.monotonic()
        with self._lock:
            recorded = [
                item.recorded_at
                for item in self._groups.get(group, {}).values()
                if item.action is not Action.QUEUED
            ]
        return max(0.0, min(recorded) + self.timeout - now) if recorded else None

    def awaits_creates(self, group: str) -> bool:
        """Whether ``group`` waits for a create (made, queued or unknown), not only for
        deletes to show."""
        with self._lock:
            items = self._groups.get(group, {}).values()
            return any(item.action is not Action.DELETE for item in items)

    def pending(self, group: str) -> int:
        with self._lock:
            return len(self._groups.get(group, {}))

    def forget_prefix(self, prefix: str) -> None:
        """Forget every group starting with ``prefix`` (e.g. ``ns/cluster/`` when the
        cluster is deleted), so expectations never outlive their owner."""
        with self._lock:
            for group in [g for g in self._groups if g.startswith(prefix)]:
                del self._groups[group]
