"""A suspended RayJob's Volcano gang goes to zero once its cluster is gone, even when the
RayCluster cache has not yet seen the deletion.

The race, as CI met it: one pass deletes the cluster; the next starts before the
cluster's deletion reached the cache, so the cache still shows the cluster as it was,
not being deleted. The second DELETE answers NotFound, the cluster is gone, and the
RayJob moves to Suspended. But the gang's cleanup read the cluster from the same stale
cache and shrank the PodGroup to the cluster's size instead of zero. Suspended never
looks at it again, so Volcano went on reserving 3 members for nothing.

The API server is faked on purpose: the subject is a pass over a cache that lags the
server, which a real server cannot hold still (the real pass is
tests/integration/batch/test_gang_operator.py)."""

from __future__ import annotations

import copy
from typing import Any

from operator_runtime.controllers.rayjob.controller import RayJobController
from operator_runtime.controllers.rayjob.options import RayJobOptions
from operator_runtime.render import RenderOptions
from operator_runtime.runtime.errors import NotFound
from operator_runtime.runtime.kinds import Object, ResourceKind
from operator_runtime.runtime.reconcile import ObjectKey
from tests.unit.controllers.versioned import VersionedServer, context_on

CLUSTER = "j-abcde"


def cluster_spec() -> Object:
    requests = {"cpu": "1", "memory": "1Gi"}
    container = {"name": "c", "image": "i", "resources": {"requests": requests}}
    return {
        "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [container]}}},
        "workerGroupSpecs": [{"groupName": "w", "replicas": 2, "minReplicas": 0,
                              "maxReplicas": 2, "rayStartParams": {},
                              "template": {"spec": {"containers": [container]}}}],
    }  # fmt: skip


def suspending_job() -> Object:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "j", "namespace": "ns", "uid": "job-uid", "generation": 2,
                     "resourceVersion": "7", "finalizers": ["ray.io/rayjob-finalizer"],
                     "labels": {"volcano.sh/queue-name": "default"}},
        "spec": {"entrypoint": "python -c 'print(1)'", "suspend": True,
                 "shutdownAfterJobFinishes": True, "rayClusterSpec": cluster_spec()},
        "status": {"jobDeploymentStatus": "Suspending", "rayClusterName": CLUSTER,
                   "jobId": "j-x", "jobStatus": "PENDING"},
    }  # fmt: skip


def the_cluster_as_the_cache_last_saw_it() -> Object:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": CLUSTER, "namespace": "ns", "uid": "cluster-uid",
                     "resourceVersion": "5",
                     "labels": {"ray.io/originated-from-crd": "RayJob",
                                "ray.io/originated-from-cr-name": "j"}},
        "spec": cluster_spec(),
    }  # fmt: skip


def gang_at_full_size() -> Object:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "ray-j-pg", "namespace": "ns", "resourceVersion": "6"},
        "spec": {"minMember": 3, "minResources": {"cpu": "3500m", "memory": "3272Mi"},
                 "queue": "default"},
    }  # fmt: skip


class ClusterAlreadyGone(VersionedServer):
    """The server's side: the cluster was deleted by the pass before (a DELETE now
    answers NotFound), the submitter Job is gone too, PodGroup updates are recorded,
    Volcano's CRDs are served."""

    def __init__(self, obj: Object) -> None:
        super().__init__(obj)
        self.deletes: list[tuple[str, str]] = []
        self.updates: list[Object] = []

    def serves(self, _api_version: str, _plural: str) -> bool:
        return True

    def find(self, _kind: ResourceKind, _name: str, _namespace: str) -> Object | None:
        return None

    def delete(self, kind: ResourceKind, name: str, _namespace: str, **_: Any) -> None:
        self.deletes.append((kind.kind, name))
        raise NotFound(404, f"{kind.plural} {name!r} not found")

    def update(self, obj: Object) -> Object:
        self.updates.append(copy.deepcopy(obj))
        return obj


def test_a_suspended_jobs_gang_is_zeroed_though_the_cache_still_shows_its_cluster() -> None:
    job = suspending_job()
    server = ClusterAlreadyGone(job)
    options = RayJobOptions(render=RenderOptions(batch_scheduler="volcano"))
    subject = RayJobController(context_on(server), options)
    caches = subject.tools.caches
    assert caches.pod_groups is not None
    caches.jobs.upsert(job)
    caches.clusters.upsert(the_cluster_as_the_cache_last_saw_it())
    caches.pod_groups.upsert(gang_at_full_size())

    subject.reconcile(ObjectKey("ns", "j"))

    assert server.deletes == [("RayCluster", CLUSTER)], "the cache's cluster is deleted again"
    assert server.statuses and server.statuses[-1]["jobDeploymentStatus"] == "Suspended"
    assert [u["spec"] for u in server.updates] == [
        {"minMember": 0, "minResources": {}, "queue": "default"}
    ], "the gang reserves nothing once the server said the cluster is gone"
    subject.close()
