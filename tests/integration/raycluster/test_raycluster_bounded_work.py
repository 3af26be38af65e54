"""One huge cluster must not starve the others or the operator's memory.

The operator runs with one worker (KubeRay's default concurrency) and watches two
namespaces. A cluster asks for 5,000,000 workers whose pods can never be scheduled;
while it is being filled, a one-worker cluster in the other namespace must get its pods
within seconds, and the operator's resident memory must stay flat. Before the fix, the
first pass built the list of all replica indexes (about 200 MB) and then created
pods one by one for hours while holding the only worker.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from hack.localcluster import LocalCluster
from operator_runtime.controllers.raycluster import RayClusterController, RayClusterOptions
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.kinds import RAY_CLUSTER
from operator_runtime.runtime.manager import Manager, ManagerOptions
from tests.integration.raycluster.conftest import (
    live_pods,
    make_client,
    raycluster,
)
from tests.kubeclient import fresh_namespace
from tests.waiting import wait_for

HUGE = 5_000_000
RSS_GROWTH_LIMIT_MB = 60.0
"""The pods created meanwhile are cached (a few KB each), and a busy 2-core machine adds
noise; 5,000,000 eager indexes alone were about 200 MB (2,000,000: 81 MB)."""
SMALL_PODS_WITHIN_SECONDS = 20.0
"""Measured a few seconds; the old code never got there (the one worker was busy for
hours)."""


def _rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS in /proc/self/status")


class RssSampler:
    """The highest resident set size seen while it runs (sampled every 50 ms)."""

    def __init__(self) -> None:
        self.peak = _rss_mb()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            self.peak = max(self.peak, _rss_mb())

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


@contextmanager
def _one_worker_operator(cluster: LocalCluster, namespaces: tuple[str, ...]) -> Iterator[None]:
    manager = Manager(
        make_client(cluster),
        ManagerOptions(
            namespaces=namespaces, concurrency=1, metrics_address="0", health_address="0"
        ),
    )
    manager.add(RayClusterController(manager.context(), RayClusterOptions()))
    stop = threading.Event()
    thread = threading.Thread(target=manager.run, args=(stop,), daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(60)


def test_a_huge_cluster_neither_grows_memory_nor_starves_a_small_one(
    ray_crds: LocalCluster, client: KubeClient, namespace: str
) -> None:
    huge = raycluster("huge", namespace, workers=HUGE)
    group = huge["spec"]["workerGroupSpecs"][0]
    group["maxReplicas"] = HUGE
    group["template"]["spec"]["nodeSelector"] = {"test.pulumi-ray/nowhere": "true"}
    with fresh_namespace(ray_crds) as other, _one_worker_operator(ray_crds, (namespace, other)):
        baseline = _rss_mb()
        with RssSampler() as rss:
            client.create(huge)
            wait_for(
                "the huge cluster's first workers",
                lambda: live_pods(client, namespace, "huge", "worker"),
            )
            started = time.monotonic()
            client.create(raycluster("small", other, workers=1))
            try:
                # The operator's part: the small cluster's head and worker exist. (Its
                # "ready" also waits for kube-scheduler, which thousands of unschedulable
                # pods of the huge cluster keep busy; that is not what is tested here.)
                wait_for(
                    "the small cluster's head and worker pods",
                    lambda: len(live_pods(client, other, "small")) == 2,
                    timeout=SMALL_PODS_WITHIN_SECONDS,
                )
            finally:
                ready_after = time.monotonic() - started
                created = len(live_pods(client, namespace, "huge", "worker"))
                client.delete(RAY_CLUSTER, "huge", namespace)
        growth = rss.peak - baseline
        print(
            f"small cluster's pods after {ready_after:.1f}s; huge cluster had {created} "
            f"workers; RSS {baseline:.0f} MB -> peak {rss.peak:.0f} MB (+{growth:.1f} MB)"
        )
        assert growth < RSS_GROWTH_LIMIT_MB, f"RSS grew by {growth:.1f} MB"
        assert created < HUGE
