"""Scale expectations: do not act on a group again until the cache has caught up.

After a reconciler creates or deletes pods, its cache does not show the change until
the watch event arrives. Acting on that stale view again would create duplicate pods,
or re-create pods it just deleted (KubeRay's 5 -> 4 scale-down bug). So each create or
delete is recorded under a group key (e.g. ``ns/cluster/group``) and
``is_satisfied(group)`` stays false until the cache reflects every recorded item:
a created object is present, a deleted one is gone. An item also counts as satisfied
after ``timeout`` seconds (30, as KubeRay's ``ExpectationsTimeout``), so a lost event
or a create the API server rejected later cannot block the group forever.

This mirrors KubeRay's ``scale_expectations.go`` (named items, checked against the
cache) rather than client-go's add/delete counters, because names make a missed or
duplicated event harmless.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from operator_runtime.runtime.clock import Clock, SystemClock

ExistsInCache = Callable[[str, str], bool]
"""(namespace, name) -> whether the cache currently holds that object."""


class Action(Enum):
    CREATE = "create"
    DELETE = "delete"


@dataclass(frozen=True)
class _Item:
    namespace: str
    name: str
    action: Action
    recorded_at: float


class Expectations:
    """Per-group create/delete expectations; thread-safe."""

    def __init__(self, *, clock: Clock | None = None, timeout: float = 30.0) -> None:
        self._clock = clock or SystemClock()
        self.timeout = timeout
        self._lock = threading.Lock()
        self._groups: dict[str, dict[tuple[str, str], _Item]] = {}

    def expect_create(self, group: str, namespace: str, name: str) -> None:
        self._record(group, namespace, name, Action.CREATE)

    def expect_delete(self, group: str, namespace: str, name: str) -> None:
        self._record(group, namespace, name, Action.DELETE)

    def _record(self, group: str, namespace: str, name: str, action: Action) -> None:
        item = _Item(namespace, name, action, self._clock.monotonic())
        with self._lock:
            self._groups.setdefault(group, {})[(namespace, name)] = item

    def is_satisfied(self, group: str, exists: ExistsInCache) -> bool:
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
                if not self._item_satisfied(item, exists, now)
            }  # fmt: skip
            if pending:
                self._groups[group] = pending
                return False
            del self._groups[group]
            return True

    def _item_satisfied(self, item: _Item, exists: ExistsInCache, now: float) -> bool:
        if now - item.recorded_at >= self.timeout:
            return True
        present = exists(item.namespace, item.name)
        return present if item.action is Action.CREATE else not present

    def pending(self, group: str) -> int:
        with self._lock:
            return len(self._groups.get(group, {}))

    def forget_group(self, group: str) -> None:
        with self._lock:
            self._groups.pop(group, None)

    def forget_prefix(self, prefix: str) -> None:
        """Forget every group starting with ``prefix`` (e.g. ``ns/cluster/`` when the
        cluster is deleted), so expectations never outlive their owner."""
        with self._lock:
            for group in [g for g in self._groups if g.startswith(prefix)]:
                del self._groups[group]
