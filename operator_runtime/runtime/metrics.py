"""Prometheus metrics of the runtime, on an injected registry (never the global one,
so tests and two managers in one process do not collide).

Names follow controller-runtime and client-go where a counterpart exists, so existing
KubeRay dashboards and alerts keep working.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

RECONCILE_RESULTS: Final = ("success", "error", "requeue_after")
"""The ``result`` label of ``controller_runtime_reconcile_total``."""
_RECONCILE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
_QUEUE_BUCKETS = (1e-4, 1e-3, 0.01, 0.1, 1, 10, 100, 1000)


class RuntimeMetrics:
    """Every metric the runtime exports; one instance per manager."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        r = registry
        self.reconcile_total = Counter(
            "controller_runtime_reconcile_total",
            "Reconciliations per controller and result (success, error, requeue_after).",
            ["controller", "result"], registry=r,
        )  # fmt: skip
        self.reconcile_errors = Counter(
            "controller_runtime_reconcile_errors_total",
            "Reconciliations that ended in an error.", ["controller"], registry=r,
        )  # fmt: skip
        self.reconcile_time = Histogram(
            "controller_runtime_reconcile_time_seconds", "Duration of one reconciliation.",
            ["controller"], buckets=_RECONCILE_BUCKETS, registry=r,
        )  # fmt: skip
        self.active_workers = Gauge(
            "controller_runtime_active_workers", "Workers reconciling right now.",
            ["controller"], registry=r,
        )  # fmt: skip
        self.queue_depth = Gauge(
            "workqueue_depth", "Keys waiting in the work queue.", ["name"], registry=r
        )
        self.queue_adds = Counter(
            "workqueue_adds_total", "Keys added to the work queue.", ["name"], registry=r
        )
        self.reconcile_triggers = Counter(
            "operator_reconcile_triggers_total",
            "Adds to a controller's work queue that caused a pass (not absorbed by a key "
            "already waiting), by source: Kind/EVENT, requeue_after or retry.",
            ["controller", "source"], registry=r,
        )  # fmt: skip
        self.queue_retries = Counter(
            "workqueue_retries_total", "Keys re-added with backoff.", ["name"], registry=r
        )
        self.queue_latency = Histogram(
            "workqueue_queue_duration_seconds", "Time a key waits before a worker takes it.",
            ["name"], buckets=_QUEUE_BUCKETS, registry=r,
        )  # fmt: skip
        self.work_duration = Histogram(
            "workqueue_work_duration_seconds", "Time from taking a key to finishing it.",
            ["name"], buckets=_QUEUE_BUCKETS, registry=r,
        )  # fmt: skip
        self.watch_restarts = Counter(
            "informer_watch_restarts_total",
            "Watches re-established, by kind and reason (timeout, error, gone).",
            ["kind", "reason"], registry=r,
        )  # fmt: skip
        self.cached_objects = Gauge(
            "informer_cached_objects", "Objects in the informer cache.", ["kind"], registry=r
        )
        self.api_requests = Counter(
            "rest_client_requests_total", "API server requests by verb and HTTP code.",
            ["verb", "code"], registry=r,
        )  # fmt: skip
        self.api_latency = Histogram(
            "rest_client_request_duration_seconds", "API server request latency.",
            ["verb"], registry=r,
        )  # fmt: skip
        self.leader = Gauge(
            "leader_election_master_status", "1 while this process leads.", ["name"],
            registry=r,
        )  # fmt: skip
        self.events_dropped = Counter(
            "operator_events_dropped_total", "Events refused by the per-object budget.",
            registry=r,
        )  # fmt: skip

    def controller_started(self, controller: str) -> None:
        """A controller's series, at zero, as controller-runtime makes them when a
        controller starts: an operator that has had no error yet then shows an error rate
        of 0 rather than no data (the boards' and the alerts' queries match nothing that is
        absent), and its first error counts in ``rate()``, which needs a sample before the
        rise (a counter that first appears at 1 has none)."""
        for result in RECONCILE_RESULTS:
            self.reconcile_total.labels(controller, result)
        self.reconcile_errors.labels(controller)
        self.active_workers.labels(controller).set(0)

    def observe_request(self, verb: str, code: str, seconds: float) -> None:
        self.api_requests.labels(verb, code).inc()
        self.api_latency.labels(verb).observe(seconds)

    def observe_watch_restart(self, kind: str, reason: str) -> None:
        self.watch_restarts.labels(kind, reason).inc()

    def triggers(self, controller: str) -> Callable[[str], None]:
        """``WorkQueue``'s ``on_trigger`` for one controller: counts passes by source."""
        children: dict[str, Any] = {}

        def triggered(source: str) -> None:
            child = children.get(source)
            if child is None:
                child = children[source] = self.reconcile_triggers.labels(controller, source)
            child.inc()

        return triggered

    def queue(self, name: str) -> QueueMetricsAdapter:
        return QueueMetricsAdapter(self, name)

    def exposition(self) -> tuple[str, bytes]:
        return CONTENT_TYPE_LATEST, generate_latest(self.registry)


class QueueMetricsAdapter:
    """``workqueue.QueueMetrics`` for one named queue."""

    def __init__(self, metrics: RuntimeMetrics, name: str) -> None:
        self._depth = metrics.queue_depth.labels(name)
        self._adds = metrics.queue_adds.labels(name)
        self._retries = metrics.queue_retries.labels(name)
        self._latency = metrics.queue_latency.labels(name)
        self._work = metrics.work_duration.labels(name)

    def added(self) -> None:
        self._adds.inc()

    def depth(self, depth: int) -> None:
        self._depth.set(depth)

    def retried(self) -> None:
        self._retries.inc()

    def waited(self, seconds: float) -> None:
        self._latency.observe(seconds)

    def worked(self, seconds: float) -> None:
        self._work.observe(seconds)
