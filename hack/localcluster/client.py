"""A client of a local control plane for the code around it (tests, fixtures, Kueue's
certificate files): the operator's own ``KubeClient`` with limits nothing here reaches.
A call is a request on a kept-alive connection, where a ``kubectl`` is a process start
(0.08 CPU-s), a TLS handshake and a discovery.

Apart from ``hack.localcluster`` itself, whose users (the demo, the benchmarks' drivers)
need not import the operator's runtime."""

from __future__ import annotations

from typing import Any

from hack.localcluster.cluster import LocalCluster
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.ratelimit import TokenBucket
from operator_runtime.runtime.transport import UrllibTransport, load_configuration


def make_client(cluster: LocalCluster, **kwargs: Any) -> KubeClient:
    transport = UrllibTransport(load_configuration(str(cluster.kubeconfig)))
    return KubeClient(transport, limiter=TokenBucket(1000, 2000), **kwargs)
