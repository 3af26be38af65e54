"""Pod creates whose outcome the operator cannot know, on the real control plane.

The operator runs in-process and reaches the API server through the fault proxy
(``tests/faultproxy.py``); the test counts pods with its own direct watch
(``PodLedger``), so a duplicate made anywhere is seen. Two faults:

- the server commits a pod create but the operator gets a 504, or a connection reset,
  (head and first worker) while its pods watch is stalled;
- the pods watch stalls right after a create, so the create event arrives only when
  the informer notices the silence and reconnects.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from hack.localcluster import LocalCluster
from operator_runtime.controllers.raycluster import RayClusterController, RayClusterOptions
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.errors import Conflict
from operator_runtime.runtime.manager import Manager, ManagerOptions
from operator_runtime.runtime.ratelimit import TokenBucket
from operator_runtime.runtime.transport import UrllibTransport, load_configuration
from tests.faultproxy import FaultProxy, match
from tests.integration.managers import manager_running
from tests.integration.raycluster.conftest import (
    live_pods,
    poke,
    raycluster,
    running_ready,
    set_replicas,
    settle,
)
from tests.integration.raycluster.watches import pod_ledger
from tests.waiting import wait_for

STALL_DETECTION = 10.0
"""The operator's watch inactivity timeout in the 504 tests (the default is 70 s)."""


@contextmanager
def operator_through(
    proxy: FaultProxy, namespace: str, *, inactivity: float = 70.0
) -> Iterator[Manager]:
    transport = UrllibTransport(load_configuration(str(proxy.kubeconfig)))
    client = KubeClient(transport, limiter=TokenBucket(1000, 2000))
    manager = Manager(
        client,
        ManagerOptions(namespaces=(namespace,), concurrency=2, metrics_address="0",
                       health_address="0", watch_inactivity_timeout=inactivity),
    )  # fmt: skip
    manager.add(RayClusterController(manager.context(), RayClusterOptions()))
    with manager_running(manager):
        yield manager


def eventually(condition: Callable[[], object], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return False


def _set_replicas(client: KubeClient, namespace: str, name: str, replicas: int) -> bool:
    try:
        set_replicas(client, namespace, name, replicas)
    except Conflict:  # the operator wrote the status meanwhile
        return False
    return True


def ready_workers(client: KubeClient, namespace: str, name: str) -> int:
    return len([p for p in live_pods(client, namespace, name, "worker") if running_ready(p)])


@pytest.mark.parametrize("fault", ["504", "reset"])
def test_a_create_the_server_made_but_the_operator_never_heard_of_makes_no_second_pod(
    ray_crds: LocalCluster, client: KubeClient, namespace: str, tmp_path: Path, fault: str
) -> None:
    workers = 3
    with FaultProxy(ray_crds, tmp_path) as proxy, pod_ledger(client, namespace, "c") as ledger:
        creates = match("POST", f"/api/v1/namespaces/{namespace}/pods")
        # The server commits the first two pod creates (the head, then a worker); the
        # operator is told 504, as when the API server's own timeout fires late, or
        # its connection breaks before the answer arrives.
        if fault == "504":
            proxy.answer_after_forward(creates, 504, times=2)
        else:
            proxy.cut_after_forward(creates, times=2)
        with operator_through(proxy, namespace, inactivity=STALL_DETECTION):
            # And the operator's pods watch is silent until it notices (10 s), so the
            # cache cannot tell it either: only a fresh LIST shows what was made.
            pod_watches = match("GET", f"/api/v1/namespaces/{namespace}/pods", watch=True)
            wait_for("the operator's pod watch", lambda: proxy.open_streams(pod_watches), 10)
            proxy.stall_streams(pod_watches)
            client.create(raycluster("c", namespace, workers=workers))
            ready = eventually(
                lambda: (
                    ready_workers(client, namespace, "c") == workers
                    and len(live_pods(client, namespace, "c", "head")) == 1
                ),
                60,
            )
            settle(3.0)
            heads = live_pods(client, namespace, "c", "head")
            live_workers = live_pods(client, namespace, "c", "worker")
        tampered = [r for r in proxy.records(creates) if r.tampered]
        print(f"\n[report] {fault} after commit x{len(tampered)} (server said "
              f"{[r.upstream_status for r in tampered]}): pods created "
              f"{len(ledger.new_pods())} for 1 head + {workers} workers, deleted "
              f"{len(ledger.deleted)}; POSTs sent {len(proxy.records(creates))}")  # fmt: skip
        assert [r.upstream_status for r in tampered] == [201, 201], "the fault was injected"
        assert len(ledger.new_pods()) == 1 + workers, "no duplicate was ever created"
        assert ledger.deleted == set()
        assert len(heads) == 1 and len(live_workers) == workers and ready


def test_a_create_event_held_up_by_a_stalled_watch_makes_no_duplicate(
    ray_crds: LocalCluster, client: KubeClient, namespace: str, tmp_path: Path
) -> None:
    # Stall detection shortened to keep the test short; the expectation timeout follows
    # it (stall detection + a relist), which is what is under test. 40 s is longer than
    # the 30 s a fixed KubeRay-like timeout would give.
    inactivity = 40.0
    with (
        FaultProxy(ray_crds, tmp_path) as proxy,
        operator_through(proxy, namespace, inactivity=inactivity),
    ):
        client.create(raycluster("c", namespace, workers=2))
        wait_for("2 workers ready", lambda: ready_workers(client, namespace, "c") == 2, 60)
        pod_watches = match("GET", f"/api/v1/namespaces/{namespace}/pods", watch=True)
        wait_for("the operator's pod watch", lambda: proxy.open_streams(pod_watches), 10)
        with pod_ledger(client, namespace, "c") as ledger:
            assert proxy.stall_streams(pod_watches) >= 1
            stalled_at = time.monotonic()
            watches_before = len(proxy.records(pod_watches))
            wait_for("replicas set to 3", lambda: _set_replicas(client, namespace, "c", 3), 10)
            wait_for("the third worker created", lambda: len(ledger.new_pods()) == 1, 30)
            # Anything that makes the operator look again while its pods watch is silent
            # (here: an annotation, every 2 s) must not make a second pod.
            reconnected = 0.0
            while time.monotonic() - stalled_at < inactivity + 8:
                poke(client, namespace, "c", str(time.monotonic()))
                if not reconnected and len(proxy.records(pod_watches)) > watches_before:
                    reconnected = time.monotonic() - stalled_at
                time.sleep(2)
            wait_for("3 workers ready", lambda: ready_workers(client, namespace, "c") == 3, 30)
            settle(2.0)
            print(f"\n[report] pods watch stalled after a create: operator reconnected after "
                  f"~{reconnected:.0f}s (stall detection {inactivity:.0f}s); pods created "
                  f"{len(ledger.new_pods())} (want 1), deleted "
                  f"{len(ledger.deleted_of_initial())}")  # fmt: skip
            assert len(ledger.new_pods()) == 1, "a duplicate worker was created"
            assert ledger.deleted_of_initial() == set()
            assert len(live_pods(client, namespace, "c", "worker")) == 3
