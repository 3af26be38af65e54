"""/readyz waits for the caches; /metrics exposes the runtime's metric names."""

from __future__ import annotations

import threading
from typing import Any

from hack.localcluster import LocalCluster
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.kinds import EVENT, ResourceKind
from operator_runtime.runtime.manager import Manager
from operator_runtime.runtime.transport import UrllibTransport, load_configuration
from tests.integration.runtime.conftest import running_manager, scrape, source_manifest
from tests.waiting import wait_for

METRIC_NAMES = (
    "controller_runtime_reconcile_total", "controller_runtime_reconcile_errors_total",
    "controller_runtime_reconcile_time_seconds", "workqueue_depth", "workqueue_adds_total",
    "workqueue_retries_total", "workqueue_queue_duration_seconds",
    "workqueue_work_duration_seconds", "informer_watch_restarts_total",
    "informer_cached_objects", "rest_client_requests_total",
    "rest_client_request_duration_seconds",
)  # fmt: skip


class SlowListClient(KubeClient):
    """Lists only once ``gate`` is set, so the test can look at an unsynced manager."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.gate = threading.Event()

    def list_all(self, kind: ResourceKind, namespace: str | None = None,
                 **kwargs: Any) -> Any:  # fmt: skip
        self.gate.wait(60)
        return super().list_all(kind, namespace, **kwargs)


def test_readyz_is_false_until_caches_sync_and_metrics_are_exposed(
    local_cluster: LocalCluster, namespace: str
) -> None:
    client = SlowListClient(UrllibTransport(load_configuration(str(local_cluster.kubeconfig))))
    with running_manager(client, namespace) as running:
        manager: Manager = running.manager
        wait_for("servers", lambda: {"health", "metrics"} <= set(manager.endpoints))
        health = manager.endpoints["health"].port
        wait_for("healthz", lambda: scrape(health, "/healthz")[0] == 200)
        status, body = scrape(health, "/readyz")
        assert status == 503 and "informers" in body
        client.gate.set()
        wait_for("ready", lambda: scrape(health, "/readyz")[0] == 200)
        client.create(source_manifest(namespace, "m", {"k": "v"}))
        wait_for("reconciled", lambda: running.copier.finished)
        status, text = scrape(manager.endpoints["metrics"].port)
        # The controller's Event arrives through the async sink as events.k8s.io/v1.
        wait_for("Copied event", lambda: [
            e for e in client.list(EVENT, namespace)["items"]
            if e.get("reason") == "Copied" and e["regarding"].get("name") == "m"
        ])  # fmt: skip
    assert status == 200
    missing = [name for name in METRIC_NAMES if f"# HELP {name} " not in text]
    assert not missing, missing
    assert 'controller_runtime_reconcile_total{controller="copier",result="success"}' in text
