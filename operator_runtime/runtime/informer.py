"""Informers: list, then watch, keeping a ``Cache`` equal to the API server's state.

One reflector thread per watched namespace (or one for all namespaces) runs:

1. **list** (paginated, a consistent read) and ``Cache.replace``: the diff against the
   cache becomes ADDED/MODIFIED/DELETED events, so nothing changed while we were
   not watching is lost, deletes included;
2. **watch** from the list's resourceVersion with ``allowWatchBookmarks``, so the
   resourceVersion we resume from stays fresh even for quiet kinds;
3. on a dropped connection or a server-side watch timeout: watch again from the last
   resourceVersion seen; on 410 Gone (that version was compacted away): back to 1;
4. no event and no bookmark for ``inactivity_timeout`` seconds (the socket read
   timeout) counts as a dropped connection, so a stalled watch cannot freeze us.

Failures, 410 Gone included, back off exponentially (0.5 s doubling to 5 s) until a
watch ends normally, and never end the thread.
Handlers run on the reflector thread and must be quick: they only enqueue keys.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Final, Literal

from operator_runtime.runtime.cache import (
    Cache,
    IndexFunc,
    Projection,
    object_key,
    strip_managed_fields,
)
from operator_runtime.runtime.client import KubeClient, WatchStream
from operator_runtime.runtime.errors import ApiError, Gone
from operator_runtime.runtime.kinds import Object, ResourceKind

WATCH_INACTIVITY_TIMEOUT: Final = 70.0
"""Seconds without an event or a bookmark after which a watch is presumed stalled."""

EventType = Literal["ADDED", "MODIFIED", "DELETED"]
Handler = Callable[[EventType, Object, Object | None], None]
"""Called with (event type, the object, the previous cached object or None)."""
RestartObserver = Callable[[str, str], None]
"""Called with (kind, reason) each time a watch is re-established."""

log = logging.getLogger(__name__)


class Informer:
    """Keeps ``cache`` in sync with one kind (optionally label/field selected)."""

    def __init__(
        self,
        client: KubeClient,
        kind: ResourceKind,
        *,
        namespaces: Sequence[str] = (),
        label_selector: str | None = None,
        field_selector: str | None = None,
        projection: Projection = strip_managed_fields,
        indexers: Mapping[str, IndexFunc] | None = None,
        inactivity_timeout: float = WATCH_INACTIVITY_TIMEOUT,
        on_restart: RestartObserver | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.client = client
        self.kind = kind
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.projection = projection
        self.cache = Cache(kind, indexers)
        self.inactivity_timeout = inactivity_timeout
        # Cluster-scoped kinds and "all namespaces" share one reflector (namespace None).
        self._namespaces: list[str | None] = (
            list(dict.fromkeys(namespaces)) if namespaces and kind.namespaced else [None]
        )
        self._on_restart = on_restart
        self._rng = rng or random.Random()
        self._handlers: list[Handler] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._streams: dict[str | None, WatchStream] = {}
        self._synced: set[str | None] = set()
        self._synced_event = threading.Event()
        self._threads: list[threading.Thread] = []

    def add_handler(self, handler: Handler) -> None:
        """Register before ``start``; objects already cached are replayed to it."""
        with self._lock:
            self._handlers.append(handler)
            existing = self.cache.list()
        for obj in existing:
            handler("ADDED", obj, None)

    def start(self) -> None:
        for namespace in self._namespaces:
            thread = threading.Thread(
                target=self._run, args=(namespace,), daemon=True,
                name=f"informer-{self.kind.plural}-{namespace or 'all'}",
            )  # fmt: skip
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        with self._lock:
            streams = list(self._streams.values())
        for stream in streams:
            stream.close()
        for thread in self._threads:
            thread.join(timeout)

    def has_synced(self) -> bool:
        return self._synced_event.is_set()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        return self._synced_event.wait(timeout)

    # -- the reflector ----------------------------------------------------------------

    def _run(self, namespace: str | None) -> None:
        # The resourceVersion to resume from lives in ``progress`` rather than in a
        # return value, so a stream that breaks mid-way still resumes from the last
        # event or bookmark it delivered, not from the list it started with.
        progress: list[str] = []
        failures = 0
        while not self._stop.is_set():
            try:
                if not progress:
                    progress.append(self._relist(namespace))
                self._watch(namespace, progress)
                failures = 0
                reason = "timeout"
            except Gone:
                # Counted like any failure: a server that answers 410 to every watch
                # right after a relist would otherwise be relisted in a tight loop.
                progress.clear()
                failures += 1
                reason = "gone"
            except ApiError as exc:
                if self._stop.is_set():
                    return
                failures += 1
                reason = "error"
                log.info("watch of %s in %s failed: %s", self.kind, namespace or "*", exc)
            except Exception:  # a bug must not silently kill the reflector thread
                if self._stop.is_set():
                    return
                failures += 1
                reason = "error"
                log.exception("reflector for %s in %s crashed", self.kind, namespace or "*")
            if self._stop.is_set():
                return
            if self._on_restart is not None:
                self._on_restart(self.kind.kind, reason)
            if failures:
                delay = min(0.5 * 2 ** (failures - 1), 5.0) * (0.8 + 0.4 * self._rng.random())
                self._stop.wait(delay)

    def _relist(self, namespace: str | None) -> str:
        items, resource_version = self.client.list_all(
            self.kind, namespace,
            label_selector=self.label_selector, field_selector=self.field_selector,
            transform=self.projection,
        )  # fmt: skip
        upserts, removed = self.cache.replace(items, namespace or None)
        for old, new in upserts:
            if old is None:
                self._dispatch("ADDED", new, None)
            elif _rv(old) != _rv(new):
                self._dispatch("MODIFIED", new, old)
        for obj in removed:
            self._dispatch("DELETED", obj, obj)
        with self._lock:
            self._synced.add(namespace)
            if len(self._synced) == len(self._namespaces):
                self._synced_event.set()
        return resource_version

    def _watch(self, namespace: str | None, progress: list[str]) -> None:
        """Watch from ``progress[0]`` until the stream ends, advancing it as we go."""
        stream = self.client.watch(
            self.kind, namespace, resource_version=progress[0],
            label_selector=self.label_selector, field_selector=self.field_selector,
            timeout_seconds=self._rng.randint(300, 600),
            inactivity_timeout=self.inactivity_timeout,
        )  # fmt: skip
        with self._lock:
            self._streams[namespace] = stream
            # stop() sets the flag before it reads the streams to close: either it sees
            # this one, or this sees the flag (else a quiet watch would outlive stop()).
            stopped = self._stop.is_set()
        try:
            if stopped:
                return
            for event in stream:
                if self._stop.is_set():
                    break
                progress[0] = self._handle(event, progress[0])
        finally:
            with self._lock:
                self._streams.pop(namespace, None)
            stream.close()

    def _handle(self, event: Object, resource_version: str) -> str:
        event_type = event.get("type")
        raw = event.get("object") or {}
        if event_type == "ERROR":
            code = int(raw.get("code") or 0)
            if code == 410:
                raise Gone(410, str(raw.get("message", "")), reason="Expired", body=raw)
            raise ApiError(f"watch error event: {raw.get('message', raw)}")
        new_version = _rv(raw) or resource_version
        if event_type == "BOOKMARK":
            return new_version
        obj = self.projection(raw)
        if event_type in ("ADDED", "MODIFIED"):
            old = self.cache.upsert(obj)
            self._dispatch("ADDED" if old is None else "MODIFIED", obj, old)
        elif event_type == "DELETED":
            old = self.cache.remove(object_key(obj))
            self._dispatch("DELETED", obj, old)
        return new_version

    def _dispatch(self, event_type: EventType, obj: Object, old: Object | None) -> None:
        with self._lock:
            handlers = list(self._handlers)
        for handler in handlers:
            try:
                handler(event_type, obj, old)
            except Exception:
                log.exception("event handler failed for %s %s", self.kind.kind, object_key(obj))


def _rv(obj: Object) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")
