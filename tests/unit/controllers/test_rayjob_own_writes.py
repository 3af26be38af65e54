"""A RayJob pass that starts before the cache has seen the controller's last writes
(the finalizer, the status) starts from the written object (``OwnWrites``), as a
RayService's and a RayCluster's do. Its own status write brings the next pass once the
cache has it, but a child's event can come first: that pass used to start the RayJob
over from the cached status (a second finalizer patch, new cluster and job names), and
the API server refused its status write (409), a request and a retry for nothing.

The API server is faked on purpose: the subject is a pass over a cache that has not
caught up, which a real server cannot hold still (the real thing is in
tests/integration/rayjob)."""

from __future__ import annotations

from operator_runtime.controllers.rayjob.controller import RayJobController
from operator_runtime.runtime.kinds import Object
from operator_runtime.runtime.reconcile import ObjectKey
from tests.unit.controllers.versioned import VersionedServer, context_on


def rayjob() -> Object:
    cluster_spec = {
        "headGroupSpec": {"template": {"spec": {"containers": [{"name": "h", "image": "i"}]}}},
    }
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "j", "namespace": "ns", "uid": "job-uid", "generation": 1,
                     "resourceVersion": "1"},
        "spec": {"entrypoint": "python -c 'print(1)'", "rayClusterSpec": cluster_spec},
    }  # fmt: skip


def test_a_pass_on_a_cache_without_our_writes_goes_on_from_them() -> None:
    cached = rayjob()
    server = VersionedServer(cached)
    context = context_on(server)
    subject = RayJobController(context)
    subject.tools.caches.jobs.upsert(cached)
    key = ObjectKey("ns", "j")
    # New: the finalizer, Initializing with the names, then (the names stored) the cluster
    subject.reconcile(key)
    assert len(server.patches) == 1 and len(server.statuses) == 1
    names = {k: server.statuses[0][k] for k in ("rayClusterName", "jobId")}
    assert [obj["metadata"]["name"] for obj in server.created] == [names["rayClusterName"]]
    subject.tools.caches.clusters.upsert(server.created[0])  # the cluster's cache caught up
    subject.reconcile(key)  # the RayJob's cache still holds it as it was created
    assert len(server.patches) == 1, "the finalizer is not patched again"
    assert len(server.created) == 1, "no second cluster"
    assert server.conflicts == 0
    assert all(status.get("jobId") == names["jobId"] for status in server.statuses)
    subject.close()
