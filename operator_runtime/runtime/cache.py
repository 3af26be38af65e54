"""The informer cache: one thread-safe store per watched kind, with indexes.

Controllers read from here, never from the API server, on the hot path. Objects are
shared, not copied: treat them as read-only and ``copy.deepcopy`` before editing.

Indexes map an index value to object keys. The defaults answer the questions our
controllers ask: "all in this namespace", "all owned by this UID" (children of a
RayCluster), "all labelled ``ray.io/cluster=<name>``" (its pods and services).

A projection trims each object before it is stored, so memory stays flat with many
pods: by default ``managedFields`` and the last-applied annotation go (often half an
object's size); ``keep_paths`` keeps only the fields a controller reads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from operator_runtime.runtime.kinds import Object, ResourceKind

Key = tuple[str, str]
"""(namespace, name); namespace is "" for cluster-scoped objects."""
IndexFunc = Callable[[Object], Iterable[str]]
Objects = list[Object]
Keys = list[Key]
Upserts = list[tuple[Object | None, Object]]
Projection = Callable[[Object], Object]

# The label KubeRay puts on every pod and service of a cluster. Spelled here rather
# than imported so the runtime stays independent of the ray.io API package.
CLUSTER_LABEL = "ray.io/cluster"
BY_NAMESPACE = "namespace"
BY_OWNER_UID = "owner-uid"
BY_CLUSTER = "ray-cluster"
_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def object_key(obj: Object) -> Key:
    metadata = obj.get("metadata") or {}
    return str(metadata.get("namespace") or ""), str(metadata.get("name") or "")


def index_namespace(obj: Object) -> Iterable[str]:
    return (object_key(obj)[0],)


def index_owner_uid(obj: Object) -> Iterable[str]:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or ()
    return tuple(str(ref["uid"]) for ref in refs if ref.get("uid"))


def index_label(label: str) -> IndexFunc:
    """Index by a label's value (objects without the label are not indexed)."""

    def index(obj: Object) -> Iterable[str]:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        # Namespaced value: two clusters of the same name in different namespaces differ.
        return (f"{object_key(obj)[0]}/{labels[label]}",) if label in labels else ()

    return index


def default_indexers() -> dict[str, IndexFunc]:
    return {
        BY_NAMESPACE: index_namespace,
        BY_OWNER_UID: index_owner_uid,
        BY_CLUSTER: index_label(CLUSTER_LABEL),
    }


def strip_managed_fields(obj: Object) -> Object:
    """Default projection: drop what no controller reads and what dominates size."""
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        return obj
    trimmed = {k: v for k, v in metadata.items() if k != "managedFields"}
    annotations = trimmed.get("annotations")
    if annotations and _LAST_APPLIED in annotations:
        trimmed["annotations"] = {k: v for k, v in annotations.items() if k != _LAST_APPLIED}
    return {**obj, "metadata": trimmed}


_ALWAYS_KEPT_METADATA = (
    "name", "namespace", "uid", "resourceVersion", "generation", "labels",
    "ownerReferences", "deletionTimestamp", "finalizers", "creationTimestamp",
)  # fmt: skip


def keep_paths(paths: Sequence[str]) -> Projection:
    """A projection keeping identity metadata plus the dotted ``paths`` (e.g.
    ``"status.phase"``, ``"spec.nodeName"``, ``"metadata.annotations"``)."""
    split = [tuple(path.split(".")) for path in paths]

    def project(obj: Object) -> Object:
        metadata = obj.get("metadata") or {}
        result: Object = {
            "apiVersion": obj.get("apiVersion"),
            "kind": obj.get("kind"),
            "metadata": {k: metadata[k] for k in _ALWAYS_KEPT_METADATA if k in metadata},
        }
        for path in split:
            _copy_path(obj, result, path)
        return result

    return project


def _copy_path(source: Mapping[str, Any], target: dict[str, Any], path: tuple[str, ...]) -> None:
    value: Any = source
    for part in path:
        # dict, not Mapping: decoded JSON is dicts, and the ABC check was almost half of what
        # projecting a pod event cost (it runs for every path of every event).
        if not isinstance(value, dict) or part not in value:
            return
        value = value[part]
    node = target
    for part in path[:-1]:
        node = node.setdefault(part, {})
    node[path[-1]] = value


class Cache:
    """A thread-safe store of one kind's objects with secondary indexes."""

    def __init__(self, kind: ResourceKind, indexers: Mapping[str, IndexFunc] | None = None) -> None:
        self.kind = kind
        self._lock = threading.RLock()
        self._objects: dict[Key, Object] = {}
        self._indexers = dict(default_indexers() if indexers is None else indexers)
        self._indexes: dict[str, dict[str, set[Key]]] = {name: {} for name in self._indexers}

    # -- reads ------------------------------------------------------------------------

    def get(self, namespace: str, name: str) -> Object | None:
        with self._lock:
            return self._objects.get((namespace, name))

    def list(self, namespace: str | None = None) -> Objects:
        with self._lock:
            if namespace is None:
                return [*self._objects.values()]
            return self.by_index(BY_NAMESPACE, namespace) if BY_NAMESPACE in self._indexes else [
                obj for key, obj in self._objects.items() if key[0] == namespace
            ]  # fmt: skip

    def by_index(self, index: str, value: str) -> Objects:
        """Objects whose ``index`` function yields ``value`` (KeyError: no such index)."""
        with self._lock:
            keys = self._indexes[index].get(value, ())
            return [self._objects[key] for key in sorted(keys)]

    def keys(self) -> Keys:
        with self._lock:
            return [*self._objects]

    def __len__(self) -> int:
        with self._lock:
            return len(self._objects)

    # -- writes (the informer only) ---------------------------------------------------

    def upsert(self, obj: Object) -> Object | None:
        """Store ``obj``; return what it replaced."""
        key = object_key(obj)
        with self._lock:
            old = self._objects.get(key)
            if old is not None:
                self._unindex(key, old)
            self._objects[key] = obj
            self._index(key, obj)
            return old

    def remove(self, key: Key) -> Object | None:
        with self._lock:
            old = self._objects.pop(key, None)
            if old is not None:
                self._unindex(key, old)
            return old

    def replace(self, objects: Iterable[Object], namespace: str | None) -> tuple[Upserts, Objects]:
        """Make the store equal ``objects`` within ``namespace`` (None: everything).

        Returns (upserts as (old, new) pairs, removed objects) so the informer can
        emit events for exactly what a relist changed, including deletes missed while
        the watch was down.
        """
        with self._lock:
            fresh = {object_key(obj): obj for obj in objects}
            stale = [
                key for key in self._objects
                if (namespace is None or key[0] == namespace) and key not in fresh
            ]  # fmt: skip
            removed = [old for key in stale if (old := self.remove(key)) is not None]
            upserts = [(self.upsert(obj), obj) for obj in fresh.values()]
            return upserts, removed

    def _index(self, key: Key, obj: Object) -> None:
        for name, func in self._indexers.items():
            for value in func(obj):
                self._indexes[name].setdefault(value, set()).add(key)

    def _unindex(self, key: Key, obj: Object) -> None:
        for name, func in self._indexers.items():
            bucket = self._indexes[name]
            for value in func(obj):
                keys = bucket.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del bucket[value]
