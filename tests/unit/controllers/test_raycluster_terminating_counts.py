"""Terminating pods (``deletionTimestamp`` set) are counted apart everywhere the pod step
counts: a single-host worker, a host of a multi-host replica, the head. One stuck on a
lost node is replaced instead of holding its place for good (docs/conformance.md).

The API server is faked as in test_raycluster_pod_expectations.py; the real-server proof
is tests/integration/raycluster/test_raycluster_terminating_pods.py."""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

import pytest

from operator_runtime.api import FeatureGates
from operator_runtime.controllers.raycluster.multihost import ReplicasReplaced
from operator_runtime.controllers.raycluster.options import RayClusterOptions
from operator_runtime.controllers.raycluster.podrules import (
    INDEX_HOLD_SLACK_SECONDS,
    held_replica_indexes,
    live_pods,
)
from operator_runtime.render import RenderOptions
from operator_runtime.runtime.clock import format_time
from operator_runtime.runtime.kinds import Object
from tests.unit.controllers.test_raycluster_pod_expectations import World, pod, raw_cluster

GONE = "2025-12-31T00:00:00Z"
"""A deletion deadline a day before the World's clock: the pod is stuck on a lost node,
long past any replica index hold (INDEX_HOLD_SLACK_SECONDS)."""


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


# Replica indexes (RayMultiHostIndexing, on by default): a Terminating single-host worker
# holds its index until it is gone or INDEX_HOLD_SLACK_SECONDS past its deletion deadline.
# KubeRay's e2e TestRayClusterSingleHostMultiSlice found two pods sharing one index.

NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)  # the World's FakeClock wall time


def worker(index: int, *, deadline_in: float | None = None) -> Object:
    """Worker ``c-g-worker-<index>`` carrying replica index ``index``; Terminating with
    its deletion deadline ``deadline_in`` seconds from NOW if given."""
    item = pod(f"c-g-worker-{index}")
    item["metadata"]["labels"]["ray.io/worker-group-replica-index"] = str(index)
    if deadline_in is not None:
        item["metadata"]["deletionTimestamp"] = deadline(deadline_in)
    return item


def deadline(seconds: float) -> str:
    """A deletion deadline ``seconds`` from NOW, as the API server writes one."""
    return format_time(NOW + datetime.timedelta(seconds=seconds))


def indexes(pods: list[Object]) -> list[str]:
    return [p["metadata"]["labels"]["ray.io/worker-group-replica-index"] for p in pods]


@pytest.mark.parametrize(
    ("pods", "held"),
    [
        ([worker(0), worker(1)], {}),
        ([worker(0), worker(1, deadline_in=30)], {1: 30 + INDEX_HOLD_SLACK_SECONDS}),
        ([worker(1, deadline_in=-5)], {1: INDEX_HOLD_SLACK_SECONDS - 5}),
        ([worker(1, deadline_in=-INDEX_HOLD_SLACK_SECONDS)], {}),  # a lost node's pod
        ([worker(1, deadline_in=30), worker(1)], {}),  # a live pod carries it already
        ([terminating(pod("c-g-worker-x"))], {}),  # no index: nothing to hold
    ],
)
def test_held_replica_indexes(pods: list[Object], held: dict[int, float]) -> None:
    assert held_replica_indexes(pods, NOW) == held


def indexed(pods: list[Object], replicas: int) -> Cluster:
    world = Cluster([pod("c-head-x", "head"), *pods])
    world.raw = raw_cluster(replicas)
    return world


def test_a_terminating_worker_holds_its_index_until_it_is_gone() -> None:
    world = indexed([worker(0), worker(1, deadline_in=30), worker(2)], 3)
    world.run()
    # Old code replaced it at once, under index 1: two pods carried it.
    assert world.client.created == [] and world.client.deleted == []
    world.pods.remove(("ns", "c-g-worker-1"))  # the kubelet reports it gone
    world.run()
    assert indexes(world.created("worker")) == ["1"]


def test_a_scale_up_beside_a_terminating_worker_takes_a_new_index() -> None:
    world = indexed([worker(0), worker(1, deadline_in=30), worker(2)], 4)
    world.run()
    assert indexes(world.created("worker")) == ["3"], "one made now; index 1 is held"


def test_the_pass_looks_again_when_the_hold_ends_and_replaces_under_another_index() -> None:
    world = indexed([worker(0), worker(1, deadline_in=30), worker(2)], 3)
    run = world.pass_over(world.raw)
    assert run.recheck_in == 30 + INDEX_HOLD_SLACK_SECONDS
    world.clock.advance(30 + INDEX_HOLD_SLACK_SECONDS)  # the pod never goes: a lost node
    world.run()
    assert indexes(world.created("worker")) == ["3"], "index 1 is never shared"
    assert world.client.deleted == []


def test_a_held_index_never_makes_a_scale_down_delete_twice() -> None:
    world = indexed([worker(0), worker(1), worker(2)], 2)
    world.run()
    (victim,) = world.client.deleted
    victim_pod = world.pods.get("ns", victim)
    assert victim_pod is not None
    victim_pod["metadata"]["deletionTimestamp"] = deadline(30)
    world.pods.upsert(victim_pod)
    for _ in range(3):
        world.run()
    assert world.client.deleted == [victim] and world.client.created == []


def test_without_indexing_a_terminating_worker_is_replaced_at_once() -> None:
    world = Cluster(
        [pod("c-head-x", "head"), worker(0), worker(1, deadline_in=30)],
        gates="RayMultiHostIndexing=false",
    )
    world.raw = raw_cluster(2)
    world.run()
    assert len(world.created("worker")) == 1


def test_a_broken_multi_host_replica_is_made_again_under_its_index_once_gone() -> None:
    soon = deadline(30)
    going, partner = host("aaaaa", 0, 1), host("aaaaa", 0, 0)
    going["metadata"]["deletionTimestamp"] = soon
    world = multi_host([pod("c-head-x", "head"), partner, going])
    with pytest.raises(ReplicasReplaced):
        world.run()
    assert world.client.deleted == ["c-g-aaaaa-0"]
    partner["metadata"]["deletionTimestamp"] = soon
    world.pods.upsert(partner)
    world.run()
    # Old code made the new replica at once under index 0, beside its Terminating hosts.
    assert world.created("worker") == []
    world.pods.remove(("ns", "c-g-aaaaa-0"))
    world.pods.remove(("ns", "c-g-aaaaa-1"))
    world.run()
    assert indexes(world.created("worker")) == ["0", "0"]


def test_an_index_deleted_by_this_very_pass_is_held() -> None:
    pods = [worker(0), worker(1)]
    assert held_replica_indexes(pods, NOW, going={"c-g-worker-1"}) == {1: INDEX_HOLD_SLACK_SECONDS}
