"""Cluster DNS for the sandbox: each RayCluster's head Service name resolves to 127.0.0.1
while the cluster exists, so an operator that dials ``<cluster>-head-svc.<ns>.svc...``
reaches the test's Ray head. Shared by the integration tests and the benchmarks."""

from __future__ import annotations

import contextlib
import threading

from hack import sandbox
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.kinds import RAY_CLUSTER

DOMAIN = "svc.cluster.local"


class ClusterHosts:
    """Maps each RayCluster's head Service name in the namespace to 127.0.0.1 while the
    cluster exists: the cluster DNS this machine does not have."""

    def __init__(self, kube: KubeClient, namespace: str) -> None:
        self._kube, self._namespace = kube, namespace
        self._names: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> ClusterHosts:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(10)
        for name in self._names:
            sandbox.remove_host(name)

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            with contextlib.suppress(Exception):  # a slow API server: next round
                items = self._kube.list(RAY_CLUSTER, self._namespace)["items"]
                live = {f"{c['metadata']['name']}-head-svc.{self._namespace}.{DOMAIN}"
                        for c in items}  # fmt: skip
                for name in live - self._names:
                    sandbox.add_host(name, "127.0.0.1")
                for name in self._names - live:
                    sandbox.remove_host(name)
                self._names = live
