"""Watches survive an API server restart and a compacted resourceVersion (410 Gone)."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from hack.localcluster import LocalCluster
from operator_runtime.runtime.client import KubeClient, WatchStream
from operator_runtime.runtime.informer import Informer
from operator_runtime.runtime.kinds import CONFIG_MAP, ResourceKind
from operator_runtime.runtime.transport import UrllibTransport, load_configuration
from tests.integration.runtime.conftest import (
    make_client,
    scrape,
    source_manifest,
)
from tests.waiting import wait_for


def apply(cluster: LocalCluster, *objects: dict[str, Any]) -> None:
    cluster.kubectl(
        "apply",
        "-f",
        "-",
        input=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}),
    )


def copy_data(cluster: LocalCluster, namespace: str, name: str) -> dict[str, str] | None:
    result = cluster.kubectl("-n", namespace, "get", "configmap", f"{name}-copy", "-o", "json",
                             check=False)  # fmt: skip
    if result.returncode:
        return None
    data: dict[str, str] = json.loads(result.stdout).get("data") or {}
    return data


def test_objects_changed_right_after_an_apiserver_restart_are_all_reconciled(
    local_cluster: LocalCluster, namespace: str, start_operator: Any
) -> None:
    operator = start_operator(f"--watch-namespace={namespace}", "--enable-leader-election=false")
    apply(local_cluster, *(source_manifest(namespace, n, {"v": "1"}) for n in ("a", "b", "c")))
    for name in ("a", "b", "c"):
        wait_for(f"{name}-copy", lambda name=name: copy_data(local_cluster, namespace, name))

    local_cluster.restart_component("kube-apiserver", 10)
    restarted = time.monotonic()
    apply(local_cluster, source_manifest(namespace, "d", {"v": "new"}),
          source_manifest(namespace, "a", {"v": "2"}))  # fmt: skip
    local_cluster.kubectl("-n", namespace, "delete", "configmap", "b")

    wait_for("d copied", lambda: copy_data(local_cluster, namespace, "d") == {"v": "new"}, 60)
    wait_for("a updated", lambda: copy_data(local_cluster, namespace, "a") == {"v": "2"}, 60)
    wait_for("b's copy removed", lambda: copy_data(local_cluster, namespace, "b") is None, 60)
    converged = time.monotonic() - restarted
    print(f"\n[report] converged {converged:.1f}s after the API server came back")
    assert operator.process.poll() is None, "the operator must never exit on its own"
    status, metrics = scrape(operator.metrics_port)
    assert status == 200
    restarts = [line for line in metrics.splitlines()
                if line.startswith("informer_watch_restarts_total{")]  # fmt: skip
    assert restarts and sum(float(line.rsplit(" ", 1)[1]) for line in restarts) >= 1


class GatedClient(KubeClient):
    """Holds new watches until ``gate`` is set and keeps the open streams."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.gate = threading.Event()
        self.gate.set()
        self.streams: list[WatchStream] = []

    def watch(self, kind: ResourceKind, namespace: str | None, **kwargs: Any) -> WatchStream:
        self.gate.wait()
        stream = super().watch(kind, namespace, **kwargs)
        self.streams.append(stream)
        return stream


def test_a_watch_from_a_compacted_resource_version_relists_and_loses_nothing(
    local_cluster: LocalCluster, namespace: str
) -> None:
    base = make_client(local_cluster)
    client = GatedClient(UrllibTransport(load_configuration(str(local_cluster.kubeconfig))))
    reasons: list[str] = []
    events: list[tuple[str, str, dict[str, str]]] = []
    lock = threading.Lock()

    def record(event_type: str, obj: dict[str, Any], old: Any) -> None:
        with lock:
            events.append((event_type, obj["metadata"]["name"], dict(obj.get("data") or {})))

    informer = Informer(client, CONFIG_MAP, namespaces=(namespace,),
                        label_selector="runtime-test/role=source",
                        on_restart=lambda kind, reason: reasons.append(reason))  # fmt: skip
    informer.add_handler(record)
    informer.start()
    try:
        assert informer.wait_for_sync(30)
        apply(local_cluster, *(source_manifest(namespace, f"keep-{i}", {"v": "0"})
                               for i in range(3)))  # fmt: skip
        wait_for("initial objects", lambda: len(informer.cache) == 3)

        # Hold the informer off the API server while history moves on and is compacted.
        client.gate.clear()
        client.streams[-1].close()
        time.sleep(0.5)
        apply(local_cluster, *(source_manifest(namespace, f"new-{i}", {"v": "1"})
                               for i in range(50)))  # fmt: skip
        apply(local_cluster, source_manifest(namespace, "keep-0", {"v": "changed"}))
        local_cluster.kubectl("-n", namespace, "delete", "configmap", "keep-1")
        local_cluster.compact()
        # A restarted API server's watch cache starts after the compacted revision, so
        # the old resourceVersion is gone from etcd and from the cache alike.
        local_cluster.restart_component("kube-apiserver", 1)
        client.gate.set()

        wait_for("relist after 410", lambda: "gone" in reasons, 60)
        wait_for("cache converged", lambda: len(informer.cache) == 52, 30)
        with lock:
            seen = list(events)
        added = {name for kind, name, _ in seen if kind == "ADDED"}
        assert {f"new-{i}" for i in range(50)} <= added
        assert ("DELETED", "keep-1") in {(kind, name) for kind, name, _ in seen}
        assert ("MODIFIED", "keep-0", {"v": "changed"}) in seen
        listed, _ = base.list_all(CONFIG_MAP, namespace, label_selector="runtime-test/role=source")
        assert {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in listed} == {
            o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in informer.cache.list()
        }
        print(f"\n[report] watch restart reasons: {reasons}")
    finally:
        client.gate.set()
        informer.stop()
