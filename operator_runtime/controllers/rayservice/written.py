"""The RayService status this controller wrote last, for a pass that starts before the
informer cache has seen that write.

A pass reads the RayService from the cache. When the next pass comes soon after a
status write (an owned cluster's event, a retry after an error), the cache may still
hold the object as it was before the write; the pass then redoes the previous step from
the old status: an incremental upgrade's HTTPRoute weight goes back one step
(25 -> 0 -> 25), a ``target_capacity`` is PUT twice, a promotion is logged twice. The
status write itself fails on the stale resourceVersion, but the Gateway API and Serve
calls before it have happened. Measured on the local control plane under load: a pass
300 ms after a write saw the old status.

So the controller remembers, per RayService, the object the API server returned for its
last write and the resourceVersions that write replaced: while the cache still shows
one of those, the pass starts from the written object instead. Any other
resourceVersion (our write seen, or a later change by someone else) ends that.
"""

from __future__ import annotations

import copy
import threading
from dataclasses import dataclass, field

from operator_runtime.runtime.kinds import Object
from operator_runtime.runtime.reconcile import ObjectKey


def _version(obj: Object) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


@dataclass
class _Written:
    replaced: set[str]
    written: Object


@dataclass
class OwnWrites:
    """Thread-safe; one entry per RayService written since the cache last caught up."""

    _lock: threading.Lock = field(default_factory=threading.Lock)
    _entries: dict[ObjectKey, _Written] = field(default_factory=dict)

    def fresh(self, key: ObjectKey, cached: Object) -> Object:
        """``cached``, or the object of our last write while the cache predates it."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return cached
            if _version(cached) in entry.replaced:
                return copy.deepcopy(entry.written)
            del self._entries[key]
            return cached

    def wrote(self, key: ObjectKey, before: Object, written: Object) -> None:
        """Record a write that replaced ``before`` with ``written``."""
        with self._lock:
            entry = self._entries.setdefault(key, _Written(set(), written))
            entry.replaced.add(_version(before))
            entry.written = copy.deepcopy(written)

    def forget(self, key: ObjectKey) -> None:
        with self._lock:
            self._entries.pop(key, None)
