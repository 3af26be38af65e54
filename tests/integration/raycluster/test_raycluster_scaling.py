"""Scaling a worker group (seed 003): exactly the pods needed are created or deleted,
never recreated, also when the informer delivers pod events late."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator

import pytest

from hack.localcluster import LocalCluster
from operator_runtime.controllers.raycluster import RayClusterOptions
from operator_runtime.controllers.raycluster.options import ray_pod_projection
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.kinds import RAY_CLUSTER, Object
from tests.integration.raycluster.conftest import (
    RunningOperator,
    get_cluster,
    live_pods,
    poke,
    raycluster,
    running_operator,
    running_ready,
    set_replicas,
    settle,
)
from tests.integration.raycluster.watches import pod_ledger
from tests.kubeclient import edit
from tests.waiting import wait_for

DELAY = 1.0
"""Seconds the slow informer holds back each pod creation and deletion event."""


def _ready_cluster(client: KubeClient, namespace: str, name: str, workers: int) -> None:
    client.create(raycluster(name, namespace, workers=workers))
    wait_for(
        f"{workers} workers ready",
        lambda: (
            len([p for p in live_pods(client, namespace, name, "worker") if running_ready(p)])
            == workers
            and (get_cluster(client, namespace, name).get("status") or {}).get("state") == "ready"
        ),
        timeout=60,
    )


def _worker_count(client: KubeClient, namespace: str, name: str) -> int:
    return len(live_pods(client, namespace, name, "worker"))


def test_scale_down_five_to_four_deletes_one_pod_and_creates_none(
    operator: RunningOperator, client: KubeClient, namespace: str
) -> None:
    _ready_cluster(client, namespace, "down", 5)
    with pod_ledger(client, namespace, "down") as ledger:
        set_replicas(client, namespace, "down", 4)
        wait_for("4 workers", lambda: _worker_count(client, namespace, "down") == 4)
        settle(3.0)
        survivors = {p["metadata"]["uid"] for p in live_pods(client, namespace, "down")}
        print(
            f"5 -> 4: deleted {len(ledger.deleted_of_initial())}, created {len(ledger.new_pods())}"
        )
        assert len(ledger.deleted_of_initial()) == 1
        assert ledger.new_pods() == set()
        assert survivors == ledger.initial - ledger.deleted_of_initial()


def test_scale_up_four_to_eight_creates_exactly_four(
    operator: RunningOperator, client: KubeClient, namespace: str
) -> None:
    _ready_cluster(client, namespace, "up", 4)
    with pod_ledger(client, namespace, "up") as ledger:
        set_replicas(client, namespace, "up", 8)
        wait_for("8 workers", lambda: _worker_count(client, namespace, "up") == 8)
        settle(3.0)
        print(
            f"4 -> 8: created {len(ledger.new_pods())}, deleted {len(ledger.deleted_of_initial())}"
        )
        assert len(ledger.new_pods()) == 4
        assert ledger.deleted_of_initial() == set()
    assert (get_cluster(client, namespace, "up").get("status") or {}).get(
        "desiredWorkerReplicas"
    ) == 8


def test_workers_to_delete_removes_exactly_the_named_pods(
    operator: RunningOperator, client: KubeClient, namespace: str
) -> None:
    _ready_cluster(client, namespace, "named", 5)
    workers = sorted(p["metadata"]["name"] for p in live_pods(client, namespace, "named", "worker"))
    victims = [workers[1], workers[3]]

    def name_victims(cluster: Object) -> None:
        # What the autoscaler does: name the pods and lower replicas in one update.
        group = cluster["spec"]["workerGroupSpecs"][0]
        group["replicas"] = 3
        group["scaleStrategy"] = {"workersToDelete": victims}

    with pod_ledger(client, namespace, "named") as ledger:
        edit(client, RAY_CLUSTER, "named", namespace, name_victims)
        wait_for("3 workers", lambda: _worker_count(client, namespace, "named") == 3)
        settle(3.0)
        deleted = {ledger.seen[uid] for uid in ledger.deleted_of_initial()}
        assert deleted == set(victims)
        assert ledger.new_pods() == set()


@pytest.fixture
def slow_operator(ray_crds: LocalCluster, namespace: str) -> Iterator[RunningOperator]:
    """An operator whose pod informer delivers every pod creation and deletion DELAY
    seconds late (the projection runs on the informer thread before the cache update)."""

    def late(pod: Object) -> Object:
        metadata = pod.get("metadata") or {}
        if metadata.get("deletionTimestamp") or not (pod.get("spec") or {}).get("nodeName"):
            time.sleep(DELAY)
        return ray_pod_projection(pod)

    with running_operator(ray_crds, namespace, RayClusterOptions(pod_projection=late)) as running:
        yield running


def _poke_while(client: KubeClient, namespace: str, name: str, done: threading.Event) -> None:
    count = 0
    while not done.wait(0.25):
        count += 1
        poke(client, namespace, name, str(count))


def test_expectations_hold_under_a_slow_informer(
    slow_operator: RunningOperator,
    client: KubeClient,
    namespace: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="operator_runtime.controllers")
    _ready_cluster(client, namespace, "slow", 5)
    assert client.get(RAY_CLUSTER, "slow", namespace)
    for target, created, deleted in ((4, 0, 1), (8, 4, 0)):
        caplog.clear()
        with pod_ledger(client, namespace, "slow") as ledger:
            done = threading.Event()
            poker = threading.Thread(target=_poke_while, args=(client, namespace, "slow", done))
            poker.start()
            try:
                set_replicas(client, namespace, "slow", target)
                wait_for(
                    f"{target} workers",
                    lambda t=target: _worker_count(client, namespace, "slow") == t,
                )  # type: ignore[misc]
                settle(3 * DELAY + 1)
            finally:
                done.set()
                poker.join()
            settle(1.0)
            print(
                f"slow informer -> {target}: created {len(ledger.new_pods())}, "
                f"deleted {len(ledger.deleted_of_initial())}"
            )
            assert len(ledger.new_pods()) == created
            assert len(ledger.deleted_of_initial()) == deleted
        # The pokes hit the group while the cache lagged: the expectations held it back.
        waits = [r for r in caplog.records if "waits for the cache" in r.getMessage()]
        assert waits, "the group was never held back by its expectations"
        assert _worker_count(client, namespace, "slow") == target
