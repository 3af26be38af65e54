"""An API server stand-in for tests of one controller pass: it applies the object's
writes (finalizer patch, status) to its own copy, bumps the resourceVersion and refuses
a write on a stale one (409) as the API server would, and records creates."""

from __future__ import annotations

import copy
import itertools
from typing import Any

from operator_runtime.runtime.clock import FakeClock
from operator_runtime.runtime.context import ControllerContext, InformerSet
from operator_runtime.runtime.events import EventRecorder
from operator_runtime.runtime.kinds import Object


class NoSink:
    def create(self, event: object) -> None:
        pass

    def update_count(self, event: object) -> None:
        pass


class VersionedServer:
    def __init__(self, obj: Object) -> None:
        self.obj = copy.deepcopy(obj)
        self.patches: list[Any] = []
        self.statuses: list[Object] = []
        self.created: list[Object] = []
        self.conflicts = 0
        self._versions = itertools.count(int(obj["metadata"]["resourceVersion"]) + 1)

    def _write(self, version: object) -> Object:
        if str(version) != self.obj["metadata"]["resourceVersion"]:
            self.conflicts += 1
            raise AssertionError("409: the write was based on a stale object")
        self.obj["metadata"]["resourceVersion"] = str(next(self._versions))
        return copy.deepcopy(self.obj)

    def patch(self, _kind: Any, _name: str, _namespace: str, body: Any, **kw: Any) -> Object:
        self.patches.append(body)
        self.obj["metadata"].update(body["metadata"])
        return self._write(kw.get("resource_version"))

    def update_status(self, obj: Object) -> Object:
        self.statuses.append(obj["status"])
        self.obj["status"] = copy.deepcopy(obj["status"])
        return self._write(obj["metadata"]["resourceVersion"])

    def create(self, obj: Object) -> Object:
        self.created.append(obj)
        return {**obj, "metadata": {**obj["metadata"], "uid": f"uid-{len(self.created)}"}}


def context_on(server: VersionedServer) -> ControllerContext:
    """A controller context whose client is ``server``, with no informers and a fake
    clock; events go nowhere."""
    clock = FakeClock()
    return ControllerContext(
        client=server,  # type: ignore[arg-type]
        informers=InformerSet(None),  # type: ignore[arg-type]
        clock=clock,
        events=lambda _: EventRecorder(NoSink(), clock=clock),  # type: ignore[arg-type]
    )
