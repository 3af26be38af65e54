"""How the pod step uses scale expectations: after it creates or deletes pods, a pass
over a cache that has not caught up yet must do nothing (the 5 -> 4 scale-down bug).

The API server is faked here on purpose: the subject is the decision logic over a
stale cache, which a real server cannot hold still. The real-server proof is in
tests/integration/raycluster/test_raycluster_scaling.py.
"""

from __future__ import annotations

import copy
import itertools
from typing import Any

import pytest

from operator_runtime.api import RayCluster
from operator_runtime.controllers.raycluster.pods import PodsReplaced, reconcile_pods
from operator_runtime.controllers.raycluster.run import ClusterRun
from operator_runtime.runtime.clock import FakeClock
from operator_runtime.runtime.kinds import Object
from operator_runtime.runtime.reconcile import ObjectKey
from tests.clustertools import ListSink, cluster_tools


class FakeClient:
    """Records writes; creates return the object with a server-made name and UID."""

    def __init__(self) -> None:
        self.created: list[Object] = []
        self.deleted: list[str] = []
        self._serial = itertools.count()  # next() is atomic: the create queue's threads

    def create(self, obj: Object) -> Object:
        result = copy.deepcopy(obj)
        meta = result["metadata"]
        meta["name"] = meta.get("name") or f"{meta['generateName']}{next(self._serial):05d}"
        meta["uid"] = f"uid-{meta['name']}"
        self.created.append(result)
        return result

    def delete(self, kind: Any, name: str, namespace: str | None = None, **_: Any) -> None:
        self.deleted.append(name)


def raw_cluster(replicas: int) -> Object:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "c", "namespace": "ns", "uid": "cluster-uid", "generation": 1},
        "spec": {
            "headGroupSpec": {"template": {"spec": {"containers": [{"name": "h", "image": "i"}]}}},
            "workerGroupSpecs": [
                {
                    "groupName": "g",
                    "replicas": replicas,
                    "minReplicas": 0,
                    "maxReplicas": 10,
                    "template": {"spec": {"containers": [{"name": "w", "image": "i"}]}},
                }
            ],
        },
    }


def pod(name: str, node_type: str = "worker", phase: str = "Running") -> Object:
    group = "headgroup" if node_type == "head" else "g"
    labels = {"ray.io/cluster": "c", "ray.io/node-type": node_type, "ray.io/group": group}
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"uid-{name}",
            "labels": labels,
            "ownerReferences": [{"uid": "cluster-uid", "controller": True}],
        },
        "spec": {"containers": [{"name": "ray"}]},
        "status": {"phase": phase},
    }


class World:
    def __init__(self, pods: list[Object]) -> None:
        self.clock = FakeClock()
        self.client = FakeClient()
        self.sink = ListSink()
        self.tools = cluster_tools(self.client, self.sink, clock=self.clock, pods=pods)
        self.pods = self.tools.caches.pods
        self.clusters = self.tools.caches.clusters

    def reconcile(self, replicas: int) -> ClusterRun:
        return self.pass_over(raw_cluster(replicas))

    def pass_over(self, raw: Object) -> ClusterRun:
        """One pod step, and then the creates it queued (a real queue, run to the end)."""
        self.clusters.upsert(raw)
        run = ClusterRun(self.tools, ObjectKey("ns", "c"), raw, RayCluster.model_validate(raw))
        try:
            reconcile_pods(run)
        finally:
            assert self.tools.creates.wait_idle(10), "the create queue did not finish"
        return run

    def reasons(self) -> list[str]:
        return [e.reason for e in self.sink.events]


def five_workers() -> list[Object]:
    return [pod("c-head-x", "head"), *(pod(f"c-g-worker-{i}") for i in range(5))]


def test_scale_down_waits_for_the_cache_and_never_recreates() -> None:
    world = World(five_workers())
    world.reconcile(4)
    assert len(world.client.deleted) == 1 and world.client.created == []
    victim = world.client.deleted[0]
    for _ in range(3):  # the cache still shows the deleted pod
        world.reconcile(4)
    assert world.client.deleted == [victim] and world.client.created == []
    world.pods.remove(("ns", victim))  # the DELETED event arrives
    world.reconcile(4)
    assert world.client.deleted == [victim] and world.client.created == []
    assert world.reasons() == ["DeletedWorkerPod"]


def test_scale_up_creates_once_until_the_cache_shows_the_pods() -> None:
    world = World(five_workers()[:5])  # head + 4 workers
    world.reconcile(8)
    assert len(world.client.created) == 4
    world.reconcile(8)
    world.reconcile(8)
    assert len(world.client.created) == 4, "a stale cache must not cause duplicates"
    for created in world.client.created:
        world.pods.upsert(created)
    world.reconcile(8)
    assert len(world.client.created) == 4 and world.client.deleted == []
    indexes = sorted(
        p["metadata"]["labels"]["ray.io/worker-group-replica-index"] for p in world.client.created
    )
    assert indexes == ["0", "1", "2", "3"]


def test_an_expectation_lapses_after_30_seconds_so_a_lost_event_cannot_block_forever() -> None:
    world = World(five_workers()[:5])
    world.reconcile(8)
    assert len(world.client.created) == 4
    world.clock.advance(29)
    # Waiting asks for a look again soon: nothing else would come back before the
    # 300 s resync if the awaited event is lost.
    assert world.reconcile(8).waiting_on_cache
    assert len(world.client.created) == 4
    world.clock.advance(2)
    world.reconcile(8)
    assert len(world.client.created) == 8


def test_a_new_worker_deleted_before_any_pass_saw_it_is_replaced_at_once() -> None:
    # Someone deletes the new pod at once, on a node that never finishes terminating it:
    # the first the cache shows of it is a deletion timestamp. The create is reflected;
    # waiting for it to look live blocked the group until the expectation lapsed.
    world = World(five_workers()[:5])
    world.reconcile(5)
    (created,) = world.client.created
    terminating = copy.deepcopy(created)
    # Its deletion deadline long past, so its replica index is not held either (that
    # hold, until the pod is gone, is test_raycluster_terminating_counts.py's).
    terminating["metadata"]["deletionTimestamp"] = "2025-12-31T00:00:00Z"
    world.pods.upsert(terminating)
    world.reconcile(5)
    assert len(world.client.created) == 2
    assert world.client.deleted == [], "a pod someone else deletes is not ours to delete"


def test_an_unhealthy_worker_is_deleted_and_nothing_is_created_in_the_same_pass() -> None:
    pods = five_workers()
    pods[2] = pod("c-g-worker-1", phase="Failed")
    world = World(pods)
    with pytest.raises(PodsReplaced, match="delete 1 unhealthy worker Pods"):
        world.reconcile(5)
    assert world.client.deleted == ["c-g-worker-1"] and world.client.created == []
    world.reconcile(5)  # the cache still shows it: nothing
    assert world.client.created == []
    world.pods.remove(("ns", "c-g-worker-1"))
    world.reconcile(5)
    assert len(world.client.created) == 1


def test_a_missing_head_is_created_once() -> None:
    world = World(five_workers()[1:])
    world.reconcile(5)
    heads = [
        p for p in world.client.created if p["metadata"]["labels"]["ray.io/node-type"] == "head"
    ]
    assert len(heads) == 1
    annotations = heads[0]["metadata"]["annotations"]
    assert annotations["ray.io/kuberay-version"] == "v1.7.0"
    assert len(annotations["ray.io/upgrade-strategy-recreate-hash"]) == 32
    world.reconcile(5)
    assert len(world.client.created) == 1
