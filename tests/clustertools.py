"""The RayCluster controller's tools around caches that a test fills by hand: for
tests that run one step of a pass (a gate, the pod step, the deletion step) without a
manager or informers. Nothing here fakes the API: the test passes the client, a real
``KubeClient`` or a recorder of writes."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from operator_runtime.controllers.raycluster.creates import CreateQueue
from operator_runtime.controllers.raycluster.metrics import ClusterMetrics
from operator_runtime.controllers.raycluster.options import RayClusterOptions
from operator_runtime.controllers.raycluster.run import ClusterCaches, ClusterTools
from operator_runtime.runtime.cache import Cache
from operator_runtime.runtime.clock import Clock, FakeClock
from operator_runtime.runtime.events import EventData, EventRecorder
from operator_runtime.runtime.expectations import Expectations
from operator_runtime.runtime.kinds import POD, RAY_CLUSTER, Object

_CHILD_CACHES = (
    "services",
    "jobs",
    "service_accounts",
    "roles",
    "role_bindings",
    "ingresses",
    "pvcs",
)


class ListSink:
    """Keeps every event the recorder sends."""

    def __init__(self) -> None:
        self.events: list[EventData] = []

    def create(self, event: EventData) -> None:
        self.events.append(event)

    def update_count(self, event: EventData) -> None:
        pass


def cluster_tools(
    client: Any,
    sink: ListSink,
    *,
    clock: Clock | None = None,
    pods: Sequence[Object] = (),
    expectation_timeout: float = 30.0,
) -> ClusterTools:
    """Tools whose caches hold ``pods`` and nothing else (``tools.caches`` takes more)."""
    clock = clock or FakeClock()
    pod_cache = Cache(POD)
    for pod in pods:
        pod_cache.upsert(pod)
    clusters = Cache(RAY_CLUSTER)
    caches = ClusterCaches(
        clusters=clusters, pods=pod_cache, **{name: Cache(POD) for name in _CHILD_CACHES}
    )
    expectations = Expectations(clock=clock, timeout=expectation_timeout)
    return ClusterTools(
        client=client,
        caches=caches,
        events=EventRecorder(sink, clock=clock),
        expectations=expectations,
        creates=CreateQueue(expectations),
        clock=clock,
        options=RayClusterOptions(),
        metrics=ClusterMetrics(clusters),
        rng=random.Random(0),
        new_token=lambda: "token",
    )
