"""Terminating pods (``deletionTimestamp`` set) are counted apart everywhere the pod step
counts: a single-host worker, a host of a multi-host replica, the head. One stuck on a
lost node is replaced instead of holding its place for good (docs/conformance.md).

The API server is faked as in test_raycluster_pod_expectations.py; the real-server proof
is tests/integration/raycluster/test_raycluster_terminating_pods.py."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from operator_runtime.api import FeatureGates
from operator_runtime.controllers.raycluster.multihost import ReplicasReplaced
from operator_runtime.controllers.raycluster.options import RayClusterOptions
from operator_runtime.controllers.raycluster.podrules import live_pods
from operator_runtime.render import RenderOptions
from operator_runtime.runtime.kinds import Object
from tests.unit.controllers.test_raycluster_pod_expectations import World, pod, raw_cluster

GONE = "2026-01-01T00:00:00Z"


def terminating(item: Object) -> Object:
    item["metadata"]["deletionTimestamp"] = GONE
    return item


def host(replica: str, index: int, host_index: int) -> Object:
    item = pod(f"c-g-{replica}-{host_index}")
    item["metadata"]["labels"].update(
        {
            "ray.io/worker-group-replica-name": f"g-{replica}",
            "ray.io/worker-group-replica-index": str(index),
            "ray.io/replica-host-index": str(host_index),
        }
    )
    return item


class Cluster(World):
    """World with a chosen cluster manifest and render options."""

    def __init__(self, pods: list[Object], *, gates: str = "", **render: Any) -> None:
        super().__init__(pods)
        options = RayClusterOptions(
            render=RenderOptions(feature_gates=FeatureGates.parse(gates), **render)
        )
        self.tools = dataclasses.replace(self.tools, options=options)
        self.raw = raw_cluster(1)

    def run(self) -> None:
        self.pass_over(self.raw)

    def created(self, node_type: str) -> list[Object]:
        return [
            p
            for p in self.client.created
            if p["metadata"]["labels"]["ray.io/node-type"] == node_type
        ]


def test_live_pods_leaves_out_only_the_terminating() -> None:
    alive, dying = pod("a"), terminating(pod("b"))
    assert live_pods([alive, dying]) == [alive]
    assert live_pods([]) == []


def multi_host(pods: list[Object]) -> Cluster:
    world = Cluster(pods, gates="RayMultiHostIndexing=true")
    world.raw["spec"]["workerGroupSpecs"][0]["numOfHosts"] = 2
    return world


def test_a_multi_host_replica_with_a_terminating_host_is_replaced_whole() -> None:
    stuck = terminating(host("aaaaa", 0, 1))
    world = multi_host([pod("c-head-x", "head"), host("aaaaa", 0, 0), stuck])
    # Old code: 2 pods under the replica name made it complete, so nothing happened.
    with pytest.raises(ReplicasReplaced, match="incomplete"):
        world.run()
    assert world.client.deleted == ["c-g-aaaaa-0"], "only the live host; the stuck one is going"
    assert world.client.created == []
    world.pods.remove(("ns", "c-g-aaaaa-0"))  # its DELETED event arrives
    world.run()
    created = world.created("worker")
    assert len(created) == 2, "one new replica of 2 hosts"
    labels = [p["metadata"]["labels"] for p in created]
    assert {label["ray.io/replica-host-index"] for label in labels} == {"0", "1"}
    assert len({label["ray.io/worker-group-replica-name"] for label in labels}) == 1
    for item in world.client.created:
        world.pods.upsert(item)
    world.run()  # the stuck host is still listed, and still not counted
    assert len(world.created("worker")) == 2 and world.client.deleted == ["c-g-aaaaa-0"]


def test_a_multi_host_replica_all_terminating_is_recreated_without_deleting_anything() -> None:
    world = multi_host(
        [
            pod("c-head-x", "head"),
            terminating(host("aaaaa", 0, 0)),
            terminating(host("aaaaa", 0, 1)),
        ]
    )
    world.run()
    assert world.client.deleted == []
    assert len(world.created("worker")) == 2


def test_a_terminating_head_is_replaced() -> None:
    world = Cluster([terminating(pod("c-head-old", "head")), pod("c-g-worker-0")])
    # Old code: one head pod listed, so none was created, for good.
    world.run()
    assert len(world.created("head")) == 1 and world.client.deleted == []
    world.pods.upsert(world.created("head")[0])
    world.run()  # old and new listed together: one live head, no "2 head pods" error
    assert len(world.created("head")) == 1 and world.client.deleted == []


@pytest.mark.parametrize(
    ("setup", "why"),
    [
        ({"deterministic_head_pod_name": True}, "the name is still taken"),
        ({}, "GCS FT: at most one head on the same storage"),
    ],
)
def test_a_terminating_head_is_not_replaced_when_two_heads_would_clash(
    setup: dict[str, Any], why: str
) -> None:
    world = Cluster([terminating(pod("c-head-old", "head")), pod("c-g-worker-0")], **setup)
    if not setup:
        world.raw["spec"]["gcsFaultToleranceOptions"] = {"redisAddress": "redis:6379"}
    world.run()
    assert world.created("head") == [], why
    assert world.client.deleted == []


def test_a_terminating_single_host_worker_is_not_a_replica() -> None:
    world = Cluster([pod("c-head-x", "head"), terminating(pod("c-g-worker-0"))])
    world.run()
    assert len(world.created("worker")) == 1 and world.client.deleted == []


def test_our_delete_is_reflected_once_the_cache_shows_the_pod_terminating() -> None:
    stuck = terminating(host("aaaaa", 0, 1))
    partner = host("aaaaa", 0, 0)
    world = multi_host([pod("c-head-x", "head"), partner, stuck])
    with pytest.raises(ReplicasReplaced):
        world.run()
    world.run()  # the cache still shows the partner live: the group waits
    assert world.client.created == []
    # The partner is on the lost node too: it never goes, but it is Terminating now.
    world.pods.upsert(terminating(partner))
    # Old code: the delete expectation held the group until the pod was gone.
    world.run()
    assert len(world.created("worker")) == 2
    assert world.client.deleted == ["c-g-aaaaa-0"]


def test_a_scale_down_stays_done_while_the_deleted_pod_terminates() -> None:
    world = Cluster([pod("c-head-x", "head"), *(pod(f"c-g-worker-{i}") for i in range(3))])
    world.raw = raw_cluster(2)
    world.run()
    (victim,) = world.client.deleted
    world.run()  # the cache does not show the delete yet
    victim_pod = world.pods.get("ns", victim)
    assert victim_pod is not None
    world.pods.upsert(terminating(victim_pod))
    world.run()
    world.run()
    assert world.client.deleted == [victim] and world.client.created == []
