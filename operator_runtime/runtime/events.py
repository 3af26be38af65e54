"""Kubernetes Events, aggregated so a hot reconcile loop cannot flood the API server.

``EventRecorder.record`` decides, purely and under a lock, what to write:

- the first occurrence of (object, type, reason, note) creates an Event;
- repeats within ``series_window`` (6 min, as client-go) only bump a counter, written
  as ``series.count`` (core/v1: ``count``) at most once per ``flush_interval`` (30 s);
- distinct new events per object are rate limited (burst 25, then one per 5 min, the
  budget of client-go's spam filter); what is refused is counted, not sent;
- as client-go's aggregator does, from the 10th distinct note of one (object, type,
  reason) on (until 10 min pass without one), the notes become one Event, "(combined from similar
  events): <note>", whose count goes up: 100 "Created worker Pod <name>" make 10
  Events, not 25 and a drop count.

Writes go through an ``EventSink``. ``AsyncEventSink`` moves them off the reconcile
thread onto one background thread with a bounded queue (dropping when full), because
an Event is diagnostics: it must never slow down or fail a reconcile.
``ApiEventSink`` writes ``events.k8s.io/v1`` and falls back to ``core/v1`` when the
former is not served.
"""

from __future__ import annotations

import datetime
import itertools
import logging
import queue
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal, Protocol

from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.clock import Clock, SystemClock, format_micro_time, format_time
from operator_runtime.runtime.errors import ApiError
from operator_runtime.runtime.kinds import CORE_EVENT, EVENT, Object
from operator_runtime.runtime.ratelimit import TokenBucket

EventType = Literal["Normal", "Warning"]
log = logging.getLogger(__name__)
SIMILAR_LIMIT = 10
"""client-go's ``maxEvents``: the 10th distinct note of one kind of event is combined."""
SIMILAR_WINDOW = 600.0
"""client-go's ``maxIntervalInSeconds``: the count of distinct notes starts over after
10 minutes without any."""
COMBINED_PREFIX = "(combined from similar events): "


@dataclass(frozen=True)
class EventData:
    """An Event independent of the API version it is written with."""

    name: str
    namespace: str
    regarding: Object  # an ObjectReference
    type: EventType
    reason: str
    action: str
    note: str
    count: int
    first_seen: datetime.datetime
    last_seen: datetime.datetime


class EventSink(Protocol):
    def create(self, event: EventData) -> None: ...
    def update_count(self, event: EventData) -> None: ...


@dataclass
class _Similar:
    last_seen: float
    notes: set[str]


@dataclass
class _Series:
    event: EventData
    last_seen: float
    last_written: float
    written_count: int


class EventRecorder:
    """Records Events for one controller; thread-safe."""

    def __init__(
        self,
        sink: EventSink,
        *,
        clock: Clock | None = None,
        series_window: float = 360.0,
        flush_interval: float = 30.0,
        burst: int = 25,
        refill_per_second: float = 1 / 300,
        max_tracked: int = 4096,
        on_dropped: Callable[[], None] | None = None,
    ) -> None:
        self._sink = sink
        self._clock = clock or SystemClock()
        self.series_window = series_window
        self.flush_interval = flush_interval
        self._burst = burst
        self._refill = refill_per_second
        self._max_tracked = max_tracked
        self._on_dropped = on_dropped
        self._lock = threading.Lock()
        self._series: OrderedDict[tuple[str, str, str, str], _Series] = OrderedDict()
        self._similar: OrderedDict[tuple[str, str, str], _Similar] = OrderedDict()
        self._budgets: OrderedDict[str, TokenBucket] = OrderedDict()
        self._names = itertools.count()
        self.dropped = 0

    def record(
        self, regarding: Object, type: EventType, reason: str, note: str, action: str = ""
    ) -> None:
        """Record that ``reason`` happened to ``regarding`` (a full object or a ref)."""
        ref = _reference(regarding)
        identity = str(ref.get("uid") or f"{ref.get('namespace')}/{ref.get('name')}")
        key = (identity, type, reason, note)
        now = self._clock.monotonic()
        wall = self._clock.now()
        with self._lock:
            if self._similar_seen(identity, type, reason, note, now) >= SIMILAR_LIMIT:
                key = (identity, type, reason, COMBINED_PREFIX)
                note = COMBINED_PREFIX + note
            series = self._series.get(key)
            if series is not None and now - series.last_seen < self.series_window:
                self._series.move_to_end(key)
                series.last_seen = now
                series.event = replace(series.event, count=series.event.count + 1, last_seen=wall)
                if now - series.last_written < self.flush_interval:
                    return
                series.last_written, series.written_count = now, series.event.count
                write, event = self._sink.update_count, series.event
            else:
                if not self._budget(identity).try_take():
                    self.dropped += 1
                    if self._on_dropped is not None:
                        self._on_dropped()
                    return
                event = EventData(
                    name=f"{ref.get('name')}.{int(wall.timestamp() * 1e9):x}{next(self._names):x}",
                    namespace=str(ref.get("namespace") or "default"),
                    regarding=ref, type=type, reason=reason, action=action or reason,
                    note=note[:1024], count=1, first_seen=wall, last_seen=wall,
                )  # fmt: skip
                self._series[key] = _Series(event, now, now, 1)
                self._trim()
                write = self._sink.create
        write(event)

    def flush(self) -> None:
        """Write counts not yet written (call periodically and at shutdown)."""
        with self._lock:
            todo = [s for s in self._series.values() if s.event.count > s.written_count]
            for series in todo:
                series.written_count = series.event.count
                series.last_written = self._clock.monotonic()
            events = [s.event for s in todo]
        for event in events:
            self._sink.update_count(event)

    def _similar_seen(self, identity: str, type: str, reason: str, note: str, now: float) -> int:
        """How many distinct notes of (object, type, reason) were seen in the window,
        counting ``note``."""
        group = (identity, type, reason)
        similar = self._similar.get(group)
        if similar is None or now - similar.last_seen > SIMILAR_WINDOW:
            similar = _Similar(now, set())
            self._similar[group] = similar
        similar.last_seen = now
        self._similar.move_to_end(group)
        if len(similar.notes) < SIMILAR_LIMIT:
            similar.notes.add(note)  # past the limit only the count matters
        while len(self._similar) > self._max_tracked:
            self._similar.popitem(last=False)
        return len(similar.notes)

    def _budget(self, identity: str) -> TokenBucket:
        budget = self._budgets.get(identity)
        if budget is None:
            budget = TokenBucket(self._refill, self._burst, clock=self._clock)
            self._budgets[identity] = budget
            while len(self._budgets) > self._max_tracked:
                self._budgets.popitem(last=False)
        self._budgets.move_to_end(identity)
        return budget

    def _trim(self) -> None:
        while len(self._series) > self._max_tracked:
            self._series.popitem(last=False)


def _reference(obj: Object) -> Object:
    if "metadata" not in obj:
        return obj  # already a reference
    metadata = obj["metadata"]
    ref = {
        "apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"),
        "namespace": metadata.get("namespace"), "name": metadata.get("name"),
        "uid": metadata.get("uid"), "resourceVersion": metadata.get("resourceVersion"),
    }  # fmt: skip
    return {k: v for k, v in ref.items() if v}


class ApiEventSink:
    """Writes events.k8s.io/v1 Events, or core/v1 ones where the former is not served."""

    def __init__(self, client: KubeClient, *, controller: str, instance: str) -> None:
        self._client = client
        self._controller = controller
        self._instance = instance
        self._use_events_api: bool | None = None

    def _events_api(self) -> bool:
        if self._use_events_api is None:
            self._use_events_api = self._client.serves("events.k8s.io/v1", "events")
        return self._use_events_api

    def create(self, event: EventData) -> None:
        if self._events_api():
            body: Object = {
                "apiVersion": "events.k8s.io/v1", "kind": "Event",
                "metadata": {"name": event.name, "namespace": event.namespace},
                "eventTime": format_micro_time(event.first_seen),
                "reportingController": self._controller, "reportingInstance": self._instance,
                "regarding": event.regarding, "type": event.type, "reason": event.reason,
                "action": event.action, "note": event.note,
            }  # fmt: skip
        else:
            body = {
                "apiVersion": "v1", "kind": "Event",
                "metadata": {"name": event.name, "namespace": event.namespace},
                "involvedObject": event.regarding, "type": event.type, "reason": event.reason,
                "message": event.note, "action": event.action, "count": event.count,
                "firstTimestamp": format_time(event.first_seen),
                "lastTimestamp": format_time(event.last_seen),
                "source": {"component": self._controller},
                "reportingComponent": self._controller, "reportingInstance": self._instance,
            }  # fmt: skip
        self._client.create(body)

    def update_count(self, event: EventData) -> None:
        if self._events_api():
            patch: Object = {"series": {
                "count": event.count, "lastObservedTime": format_micro_time(event.last_seen),
            }}  # fmt: skip
            self._client.patch(EVENT, event.name, event.namespace, patch)
        else:
            patch = {"count": event.count, "lastTimestamp": format_time(event.last_seen)}
            self._client.patch(CORE_EVENT, event.name, event.namespace, patch)


class AsyncEventSink:
    """Delivers to ``sink`` on a background thread; never blocks the caller."""

    def __init__(self, sink: EventSink, *, maxsize: int = 1000) -> None:
        self._sink = sink
        self._queue: queue.Queue[tuple[str, EventData] | None] = queue.Queue(maxsize)
        self._thread = threading.Thread(target=self._run, name="event-sink", daemon=True)
        self.dropped = 0
        self._thread.start()

    def create(self, event: EventData) -> None:
        self._put(("create", event))

    def update_count(self, event: EventData) -> None:
        self._put(("update", event))

    def _put(self, item: tuple[str, EventData]) -> None:
        try:
            self._queue.put_nowait(item)
        except queue.Full:
            self.dropped += 1

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            operation, event = item
            try:
                if operation == "create":
                    self._sink.create(event)
                else:
                    self._sink.update_count(event)
            except ApiError as exc:
                log.info("event %s/%s not written: %s", event.namespace, event.reason, exc)
            except Exception:
                log.exception("event sink failed")

    def close(self, timeout: float = 5.0) -> None:
        """Deliver what is queued (up to ``timeout``), then stop the thread."""
        try:
            self._queue.put(None, timeout=timeout)
        except queue.Full:
            return
        self._thread.join(timeout)
