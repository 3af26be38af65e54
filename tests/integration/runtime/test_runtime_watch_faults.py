"""Watches under faults injected by the proxy in front of the real API server."""

from __future__ import annotations

import json
import time
from pathlib import Path

from hack.localcluster import LocalCluster
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.ratelimit import TokenBucket
from operator_runtime.runtime.reconcile import ObjectKey
from operator_runtime.runtime.transport import UrllibTransport, load_configuration
from tests.faultproxy import FaultProxy, Request, match
from tests.integration.runtime.conftest import running_manager, source_manifest
from tests.waiting import wait_for

GONE = json.dumps({"type": "ERROR", "object": {
    "kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Expired",
    "message": "too old resource version", "code": 410,
}}).encode() + b"\n"  # fmt: skip


def test_a_watch_that_is_always_gone_relists_with_backoff_not_in_a_loop(
    local_cluster: LocalCluster, client: KubeClient, namespace: str, tmp_path: Path
) -> None:
    with FaultProxy(local_cluster, tmp_path) as proxy:
        transport = UrllibTransport(load_configuration(str(proxy.kubeconfig)))
        proxied = KubeClient(transport, limiter=TokenBucket(1000, 2000))
        configmaps = f"/api/v1/namespaces/{namespace}/configmaps"

        def lists(request: Request) -> bool:
            return match("GET", configmaps, watch=False)(request) and request.path == configmaps

        # Every watch of ConfigMaps is answered "410 Gone" at once, however fresh the
        # resourceVersion of the list before it (as after an etcd restore).
        proxy.reply(match("GET", configmaps, watch=True), 200, GONE)
        with running_manager(proxied, namespace) as running:
            wait_for("the first relists", lambda: len(proxy.records(lists)) >= 2, 10)
            window_start = time.monotonic()
            listed_before = len(proxy.records(lists))
            time.sleep(6)
            relists = len(proxy.records(lists)) - listed_before
            rate = relists / (time.monotonic() - window_start)
            proxy.clear()
            # The informers recover once watches work again (backoff capped at 5 s).
            client.create(source_manifest(namespace, "after", {"k": "v"}))
            after = ObjectKey(namespace, "after")
            wait_for("reconciled after recovery", lambda: running.copier.finished.get(after), 20)
        print(f"\n[report] every watch answered 410: {relists} relists in 6 s "
              f"({rate:.1f}/s) across the two ConfigMap informers")  # fmt: skip
        # Two informers (sources, copies), each backing off 0.5, 1, 2, 4 s (+-20%).
        assert relists <= 2 * 4, "410s count toward the backoff"
