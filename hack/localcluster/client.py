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


def make_transport(cluster: LocalCluster) -> UrllibTransport:
    """A kept-alive connection to ``cluster``'s API server as its admin: what a client is
    built on, and what a caller reads a subresource the client has no verb for through
    (a pod's ``log``)."""
    return UrllibTransport(load_configuration(str(cluster.kubeconfig)))


def make_client(cluster: LocalCluster, **kwargs: Any) -> KubeClient:
    return KubeClient(make_transport(cluster), limiter=TokenBucket(1000, 2000), **kwargs)
