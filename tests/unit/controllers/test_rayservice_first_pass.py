"""A new RayService's first pass adds the finalizer and goes on from the patched object:
its status and its first cluster are written in that pass. KubeRay's pass ends at the
finalizer, and its next one comes from the back of the work queue, so in a burst no
cluster was created before every RayService had its finalizer (benchmarks/README.md).

The API server is faked on purpose: the subject is what one pass writes, which a real
server with a running operator cannot hold to one pass (the real thing is in
tests/integration/rayservice)."""

from __future__ import annotations

import pytest

from operator_runtime.api.finalizers import Finalizer
from operator_runtime.controllers.rayservice.controller import RayServiceController
from operator_runtime.runtime.errors import TemporaryError
from operator_runtime.runtime.kinds import Object
from operator_runtime.runtime.reconcile import ObjectKey
from tests.unit.controllers.versioned import VersionedServer, context_on


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
    server = VersionedServer(rayservice())
    context = context_on(server)
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
