"""The object a controller wrote last, for a pass that starts before the informer
cache has seen that write.

A pass reads its object from the cache. When the next pass comes soon after a write
(a child's event, a retry after an error), the cache may still hold the object as it
was before: the pass then redoes the previous step from the old status. For a
RayService an incremental upgrade's HTTPRoute weight went back one step (25 -> 0 ->
25), a ``target_capacity`` was PUT twice, a promotion logged twice; the status write
itself failed on the stale resourceVersion, but the Gateway API and Serve calls before
it had happened. Measured on the local control plane under load: a pass 300 ms after a
write saw the old status. For a RayCluster or a RayJob the pass wrote a status from the
old one, which the API server refused (409) and the retry wrote again: a request and a
pass each, for nothing.

So each controller remembers, per object, what the API server returned for its last
write (a status write, a finalizer patch) and the resourceVersions that write replaced:
while the cache still shows one of those, the pass starts from the written object
instead. Any other resourceVersion (our write seen, or a later change by someone else)
ends that.
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
    """Thread-safe; one entry per object written since the cache last caught up."""

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
