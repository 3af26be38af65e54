"""Our own watches of what happens on the API server: a test counts pod creations and
deletions (and orders events) from these, never from the operator's logs."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.errors import ApiError, TransportError
from operator_runtime.runtime.kinds import POD, Object


class _Watcher:
    """A watch in a daemon thread from ``_version`` until ``close()``, restarted after
    stream errors; subclasses say what to watch and what to keep of each event."""

    client: KubeClient
    namespace: str
    stop: threading.Event
    _version: str

    def _target(self) -> tuple[Any, str]:
        """The kind and label selector to watch."""
        raise NotImplementedError

    def _record(self, event: Object) -> None:
        raise NotImplementedError

    def _seed(self, items: list[Object]) -> None:
        """Take note of what exists before the watch starts (nothing, by default)."""

    def start(self) -> None:
        kind, selector = self._target()
        listing = self.client.list(kind, self.namespace, label_selector=selector)
        self._seed(listing["items"])
        self._version = str(listing["metadata"]["resourceVersion"])
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        kind, selector = self._target()
        while not self.stop.is_set():
            try:
                stream = self.client.watch(
                    kind,
                    self.namespace,
                    resource_version=self._version,
                    label_selector=selector,
                    timeout_seconds=60,
                    inactivity_timeout=2.0,
                )
                self._stream = stream
                for event in stream:
                    self._record(event)
                    if self.stop.is_set():
                        break
            except (TransportError, ApiError):
                continue
            except ValueError:
                if self.stop.is_set():
                    return  # the stream was closed under the reader: not an event
                raise

    def close(self) -> None:
        self.stop.set()
        stream = getattr(self, "_stream", None)
        if stream is not None:
            stream.close()


W = TypeVar("W", bound=_Watcher)


@contextmanager
def _running(watcher: W) -> Iterator[W]:
    watcher.start()
    try:
        yield watcher
    finally:
        watcher.close()


# -- counting what happens to pods ------------------------------------------------------


@dataclass
class PodLedger(_Watcher):
    """Every pod UID of one cluster seen by our own watch: when it appeared, whether it
    was deleted (deletionTimestamp set or gone)."""

    client: KubeClient
    namespace: str
    cluster: str
    initial: set[str] = field(default_factory=set)
    seen: dict[str, str] = field(default_factory=dict)  # uid -> pod name
    deleted: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stop: threading.Event = field(default_factory=threading.Event)

    def _seed(self, items: list[Object]) -> None:
        for pod in items:
            uid = pod["metadata"]["uid"]
            self.seen[uid] = pod["metadata"]["name"]
            if pod["metadata"].get("deletionTimestamp"):
                self.deleted.add(uid)
            else:
                self.initial.add(uid)

    def _target(self) -> tuple[Any, str]:
        return POD, f"ray.io/cluster={self.cluster},ray.io/node-type in (head,worker)"

    def _record(self, event: Object) -> None:
        obj = event.get("object") or {}
        metadata = obj.get("metadata") or {}
        if event.get("type") == "BOOKMARK" or "uid" not in metadata:
            return
        with self.lock:
            self._version = str(metadata.get("resourceVersion") or self._version)
            self.seen.setdefault(metadata["uid"], metadata["name"])
            if event.get("type") == "DELETED" or metadata.get("deletionTimestamp"):
                self.deleted.add(metadata["uid"])

    def created(self) -> set[str]:
        with self.lock:
            return set(self.seen) - self.initial - (self.deleted - set(self.seen))

    def new_pods(self) -> set[str]:
        with self.lock:
            return set(self.seen) - self.initial

    def deleted_of_initial(self) -> set[str]:
        with self.lock:
            return self.deleted & self.initial


def pod_ledger(
    client: KubeClient, namespace: str, cluster: str
) -> AbstractContextManager[PodLedger]:
    return _running(PodLedger(client, namespace, cluster))


@dataclass
class EventLog(_Watcher):
    """Every watch event of one kind (and selector) from now on, with its
    resourceVersion: a single etcd orders them globally, so "A happened before B"
    can be checked exactly across kinds."""

    client: KubeClient
    kind: Any
    namespace: str
    selector: str
    entries: list[tuple[str, int, Object]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def _target(self) -> tuple[Any, str]:
        return self.kind, self.selector

    def _record(self, event: Object) -> None:
        obj = event.get("object") or {}
        version = str((obj.get("metadata") or {}).get("resourceVersion") or "")
        if event.get("type") != "BOOKMARK" and version:
            self.entries.append((str(event["type"]), int(version), obj))
        self._version = version or self._version

    def first(self, event_type: str) -> int | None:
        return next((rv for kind, rv, _ in self.entries if kind == event_type), None)


def event_log(
    client: KubeClient, kind: Any, namespace: str, selector: str
) -> AbstractContextManager[EventLog]:
    return _running(EventLog(client, kind, namespace, selector))
