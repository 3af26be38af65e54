"""Every change to a set of objects, in order, from a watch.

A poll sees only the states that last longer than its interval, and on a loaded machine
that can be none of the short ones; a watch hands over every write. ``Recorder`` lists
the objects that match when it starts (as ``ADDED``), then follows a watch from that
list's resourceVersion on a thread until it is closed.
"""

from __future__ import annotations

import threading
import time
from contextlib import suppress
from typing import Any, NamedTuple

from operator_runtime.runtime.client import KubeClient, WatchStream
from operator_runtime.runtime.kinds import ResourceKind


class Event(NamedTuple):
    type: str
    """ADDED, MODIFIED or DELETED."""
    object: dict[str, Any]
    at: float
    """When it arrived (``time.monotonic()``)."""


class Recorder:
    def __init__(self, kube: KubeClient, kind: ResourceKind, namespace: str, *,
                 label_selector: str | None = None, field_selector: str | None = None,
                 ) -> None:  # fmt: skip
        self._kube, self._kind, self._namespace = kube, kind, namespace
        self._selectors = {"label_selector": label_selector, "field_selector": field_selector}
        self.events: list[Event] = []
        self._stream: WatchStream | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Recorder:
        found = self._kube.list(self._kind, self._namespace, **self._selectors)
        now = time.monotonic()
        self.events.extend(Event("ADDED", item, now) for item in found["items"])
        self._stream = self._kube.watch(
            self._kind, self._namespace, resource_version=found["metadata"]["resourceVersion"],
            timeout_seconds=3600, **self._selectors,
        )  # fmt: skip
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._stream is not None:
            self._stream.close()
        self._thread.join(5)

    def _run(self) -> None:
        assert self._stream is not None
        with suppress(Exception):  # the stream, closed under it by __exit__
            for event in self._stream:
                if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                    self.events.append(Event(event["type"], event["object"], time.monotonic()))
