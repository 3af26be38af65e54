"""Cluster DNS for the sandbox: each RayCluster's head Service name resolves to 127.0.0.1
while the cluster exists, so an operator that dials ``<cluster>-head-svc.<ns>.svc...``
reaches the test's Ray head. Shared by the integration tests and the benchmarks."""

from __future__ import annotations

import threading

from hack import sandbox
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.informer import EventType, Informer
from operator_runtime.runtime.kinds import RAY_CLUSTER, Object

DOMAIN = "svc.cluster.local"


class ClusterHosts:
    """Maps each RayCluster's head Service name in the namespace to 127.0.0.1 while the
    cluster exists: the cluster DNS this machine does not have.

    The operator's own informer follows the namespace's RayClusters (a list, then a
    watch): a name is mapped as soon as its cluster's ADDED event arrives, and an idle
    namespace costs no request. Polling a list five times a second did the same for
    some 100 CPU-s of the test processes a run, and as much of the API servers'."""

    def __init__(self, kube: KubeClient, namespace: str) -> None:
        self._namespace = namespace
        self._names: set[str] = set()
        self._lock = threading.Lock()
        self._informer = Informer(kube, RAY_CLUSTER, namespaces=[namespace])
        self._informer.add_handler(self._on_event)

    def __enter__(self) -> ClusterHosts:
        self._informer.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._informer.stop(10)
        with self._lock:
            names, self._names = self._names, set()
        for name in names:
            sandbox.remove_host(name)

    def _on_event(self, event: EventType, cluster: Object, _old: Object | None) -> None:
        name = f"{cluster['metadata']['name']}-head-svc.{self._namespace}.{DOMAIN}"
        with self._lock:
            if event == "DELETED":
                if name in self._names:
                    self._names.discard(name)
                    sandbox.remove_host(name)
            elif name not in self._names:
                self._names.add(name)
                sandbox.add_host(name, "127.0.0.1")
