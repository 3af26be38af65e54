"""The contract between the runtime and a controller.

A controller is level-triggered: ``reconcile`` receives only a key, never the event,
reads the current state from the cache, and makes the world match. Its outcomes:

- return ``Result()``: done until something changes;
- return ``Result(requeue_after=s)``: look again in ``s`` seconds (timed work, polling);
- raise ``TemporaryError`` or any other exception: retry with per-key backoff
  (a ``Conflict`` from a stale cache is the common case);
- raise ``PermanentError``: do not retry; logged and counted, waits for a change.

``watches`` declares which kinds feed the controller's queue and how an object maps
to the keys to reconcile: its own key (``own``), its controller owner's key
(``owned``, via ownerReferences) or anything else (``mapped``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from operator_runtime.runtime.cache import Projection
from operator_runtime.runtime.informer import EventType
from operator_runtime.runtime.kinds import Object, ResourceKind


@dataclass(frozen=True, order=True)
class ObjectKey:
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @classmethod
    def of(cls, obj: Object) -> ObjectKey:
        metadata = obj.get("metadata") or {}
        return cls(str(metadata.get("namespace") or ""), str(metadata.get("name") or ""))


@dataclass(frozen=True)
class Result:
    """``requeue_after``: seconds until the key is reconciled again (None: not needed)."""

    requeue_after: float | None = None


KeyMapper = Callable[[Object], Iterable[ObjectKey]]
Predicate = Callable[[EventType, Object, Object | None], bool]


@dataclass(frozen=True)
class Watch:
    """One source of keys: a kind (optionally label-selected) and a mapping to keys."""

    kind: ResourceKind
    to_keys: KeyMapper
    label_selector: str | None = None
    projection: Projection | None = None
    predicate: Predicate | None = None


class Controller(Protocol):
    """What the manager runs. ``name`` labels metrics, logs and the queue."""

    name: str

    def watches(self) -> Sequence[Watch]: ...

    def reconcile(self, key: ObjectKey) -> Result: ...


WATCHED_METADATA = ("generation", "labels", "annotations", "deletionTimestamp", "finalizers")


def metadata_changed(event: EventType, obj: Object, old: Object | None) -> bool:
    """Skip updates that changed none of spec (``generation``), labels, annotations,
    deletion or finalizers: our own status writes, mostly. Creates and deletes pass."""
    if event != "MODIFIED" or old is None:
        return True
    new_meta, old_meta = obj.get("metadata") or {}, old.get("metadata") or {}
    return any(new_meta.get(k) != old_meta.get(k) for k in WATCHED_METADATA)


def generation_changed(event: EventType, obj: Object, old: Object | None) -> bool:
    """Skip updates that did not change ``metadata.generation`` (e.g. our own status
    writes); creates and deletes always pass."""
    if event != "MODIFIED" or old is None:
        return True
    generation = (obj.get("metadata") or {}).get("generation")
    return generation is None or generation != (old.get("metadata") or {}).get("generation")


def own(
    kind: ResourceKind,
    *,
    label_selector: str | None = None,
    projection: Projection | None = None,
    predicate: Predicate | None = None,
) -> Watch:
    """Reconcile an object of ``kind`` under its own key."""
    return Watch(kind, lambda obj: (ObjectKey.of(obj),), label_selector, projection, predicate)


def controlled_by(obj: Object, uid: str) -> bool:
    """Whether the object with ``uid`` is ``obj``'s controller owner: the one test of
    "ours" that a label (anyone can set one) cannot fake."""
    refs = (obj.get("metadata") or {}).get("ownerReferences") or ()
    return any(ref.get("controller") and ref.get("uid") == uid for ref in refs)


def owned(
    kind: ResourceKind,
    owner: ResourceKind,
    *,
    label_selector: str | None = None,
    projection: Projection | None = None,
    predicate: Predicate | None = None,
) -> Watch:
    """Reconcile the controlling owner (an ``owner`` kind) of an object of ``kind``."""

    def to_keys(obj: Object) -> Iterable[ObjectKey]:
        metadata = obj.get("metadata") or {}
        namespace = str(metadata.get("namespace") or "")
        return [
            ObjectKey(namespace, str(ref["name"]))
            for ref in metadata.get("ownerReferences") or ()
            if ref.get("controller") and ref.get("kind") == owner.kind
            and str(ref.get("apiVersion", "")).split("/")[0] == owner.api_version.split("/")[0]
        ]  # fmt: skip

    return Watch(kind, to_keys, label_selector, projection, predicate)


def mapped(
    kind: ResourceKind,
    to_keys: KeyMapper,
    *,
    label_selector: str | None = None,
    projection: Projection | None = None,
    predicate: Predicate | None = None,
) -> Watch:
    """Reconcile whatever keys ``to_keys`` returns for an object of ``kind``."""
    return Watch(kind, to_keys, label_selector, projection, predicate)
