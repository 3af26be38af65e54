"""A new RayService's first pass adds the finalizer and goes on from the patched object:
its status and its first cluster are written in that pass. KubeRay's pass ends at the
finalizer, and its next one comes from the back of the work queue, so in a burst no
cluster was created before every RayService had its finalizer (benchmarks/README.md).

The API server is faked on purpose: the subject is what one pass writes, which a real
server with a running operator cannot hold to one pass (the real thing is in
tests/integration/rayservice)."""

from __future__ import annotations

import copy
import itertools
from typing import Any

import pytest

from operator_runtime.api.finalizers import Finalizer
from operator_runtime.controllers.rayservice.controller import RayServiceController
from operator_runtime.runtime.clock import FakeClock
from operator_runtime.runtime.context import ControllerContext, InformerSet
from operator_runtime.runtime.errors import TemporaryError
from operator_runtime.runtime.events import EventRecorder
from operator_runtime.runtime.kinds import Object
from operator_runtime.runtime.reconcile import ObjectKey


class NoSink:
    def create(self, event: object) -> None:
        pass

    def update_count(self, event: object) -> None:
        pass


class Server:
    """Applies the RayService's writes to its own copy, bumping the resourceVersion and
    refusing a write on a stale one, as the API server would; records creates."""

    def __init__(self, obj: Object) -> None:
        self.obj = copy.deepcopy(obj)
        self.patches: list[Any] = []
        self.statuses: list[Object] = []
        self.created: list[Object] = []
        self._versions = itertools.count(2)

    def _write(self, version: object) -> Object:
        assert str(version) == self.obj["metadata"]["resourceVersion"], "409: stale write"
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


def rayservice() -> Object:
    cluster_spec = {
        "headGroupSpec": {"template": {"spec": {"containers": [{"name": "h", "image": "i"}]}}},
    }
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": "s", "namespace": "ns", "uid": "svc-uid", "generation": 1,
                     "resourceVersion": "1"},
        "spec": {"rayClusterConfig": cluster_spec},
    }  # fmt: skip


def test_the_first_pass_of_a_new_rayservice_creates_its_cluster() -> None:
    server = Server(rayservice())
    clock = FakeClock()
    context = ControllerContext(
        client=server,  # type: ignore[arg-type]
        informers=InformerSet(None),  # type: ignore[arg-type]
        clock=clock,
        events=lambda _: EventRecorder(NoSink(), clock=clock),  # type: ignore[arg-type]
    )
    subject = RayServiceController(context)
    subject.tools.caches.rayservices.upsert(rayservice())
    # As in the pass that creates a cluster in any case: its head pod does not exist yet,
    # which KubeRay's pass reports too ("found 0 head"), and the pass comes back.
    with pytest.raises(TemporaryError, match="found 0 head"):
        subject.reconcile(ObjectKey("ns", "s"))
    assert [p["metadata"]["finalizers"] for p in server.patches] == [[Finalizer.RAYSERVICE.value]]
    assert [c["kind"] for c in server.created] == ["RayCluster"]
    assert server.statuses, "the status is written in the same pass"
    assert server.created[0]["metadata"]["name"] in str(server.statuses[-1])
