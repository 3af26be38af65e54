"""Our own watches of what happens on the API server: a test counts pod creations and
deletions (and orders events) from these, never from the operator's logs."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.errors import ApiError, TransportError
from operator_runtime.runtime.kinds import POD, Object

# -- counting what happens to pods ------------------------------------------------------


@dataclass
class PodLedger:
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

    def start(self) -> None:
        listing = self.client.list(POD, self.namespace, label_selector=self._selector)
        for pod in listing["items"]:
            uid = pod["metadata"]["uid"]
            self.seen[uid] = pod["metadata"]["name"]
            if pod["metadata"].get("deletionTimestamp"):
                self.deleted.add(uid)
            else:
                self.initial.add(uid)
        self._version = str(listing["metadata"]["resourceVersion"])
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    @property
    def _selector(self) -> str:
        return f"ray.io/cluster={self.cluster},ray.io/node-type in (head,worker)"

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                stream = self.client.watch(
                    POD,
                    self.namespace,
                    resource_version=self._version,
                    label_selector=self._selector,
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

    def close(self) -> None:
        self.stop.set()
        stream = getattr(self, "_stream", None)
        if stream is not None:
            stream.close()


@contextmanager
def pod_ledger(client: KubeClient, namespace: str, cluster: str) -> Iterator[PodLedger]:
    ledger = PodLedger(client, namespace, cluster)
    ledger.start()
    try:
        yield ledger
    finally:
        ledger.close()


@dataclass
class EventLog:
    """Every watch event of one kind (and selector) from now on, with its
    resourceVersion: a single etcd orders them globally, so "A happened before B"
    can be checked exactly across kinds."""

    client: KubeClient
    kind: Any
    namespace: str
    selector: str
    entries: list[tuple[str, int, Object]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None:
        listing = self.client.list(self.kind, self.namespace, label_selector=self.selector)
        self._version = str(listing["metadata"]["resourceVersion"])
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                stream = self.client.watch(
                    self.kind,
                    self.namespace,
                    resource_version=self._version,
                    label_selector=self.selector,
                    timeout_seconds=60,
                    inactivity_timeout=2.0,
                )
                self._stream = stream
                for event in stream:
                    obj = event.get("object") or {}
                    version = str((obj.get("metadata") or {}).get("resourceVersion") or "")
                    if event.get("type") != "BOOKMARK" and version:
                        self.entries.append((str(event["type"]), int(version), obj))
                    self._version = version or self._version
                    if self.stop.is_set():
                        break
            except (TransportError, ApiError):
                continue

    def first(self, event_type: str) -> int | None:
        return next((rv for kind, rv, _ in self.entries if kind == event_type), None)

    def close(self) -> None:
        self.stop.set()
        stream = getattr(self, "_stream", None)
        if stream is not None:
            stream.close()


@contextmanager
def event_log(client: KubeClient, kind: Any, namespace: str, selector: str) -> Iterator[EventLog]:
    log = EventLog(client, kind, namespace, selector)
    log.start()
    try:
        yield log
    finally:
        log.close()
