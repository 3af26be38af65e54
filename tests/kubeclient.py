"""The tests' own clients of a local control plane (``hack/localcluster/client.py``): a
run of the suite once started some 2,700 ``kubectl`` processes, a few hundred of those
for its namespaces."""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from hack.localcluster import LocalCluster
from hack.localcluster.client import make_client, make_transport
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.errors import ApiError, Conflict, NotFound
from operator_runtime.runtime.kinds import (
    NAMESPACE,
    RAY_CLUSTER,
    RAY_CRON_JOB,
    RAY_JOB,
    RAY_SERVICE,
    SERVICE_ACCOUNT,
    Object,
    ResourceKind,
)
from operator_runtime.runtime.transport import UrllibTransport
from tests.waiting import wait_for

_SHARED: dict[str, KubeClient] = {}
_TRANSPORTS: dict[str, UrllibTransport] = {}
LOG_STARTING = 400
"""What the API server answers for the log of a pod whose container has not started."""
LOG_UNSCHEDULED = 204
"""What it answers, with no body, for the log of a pod not yet bound to a node (its
``LogLocation`` has no node to ask): on a loaded machine the scheduler can take longer
than a test takes to look."""


def shared_client(cluster: LocalCluster) -> KubeClient:
    """One client per control plane for the whole process, for the fixtures' own calls."""
    key = str(cluster.kubeconfig)
    if key not in _SHARED:
        _SHARED[key] = make_client(cluster)
    return _SHARED[key]


def pod_log(cluster: LocalCluster, namespace: str, pod: str) -> str | None:
    """The log of ``pod``'s one container, as ``kubectl logs`` prints it, on this process's
    kept connection (a test polls it every second, and a kubectl per look is a process
    start, a TLS handshake and a discovery); None while the pod is not yet on a node or
    its container has not started."""
    key = str(cluster.kubeconfig)
    if key not in _TRANSPORTS:
        _TRANSPORTS[key] = make_transport(cluster)
    response = _TRANSPORTS[key].request(
        "GET", f"/api/v1/namespaces/{namespace}/pods/{pod}/log",
        query=[], body=None, headers={}, timeout=(5.0, 30.0),
    )  # fmt: skip
    if response.status in (LOG_STARTING, LOG_UNSCHEDULED):
        return None
    if response.status != 200:
        raise AssertionError(f"log of pod {namespace}/{pod}: HTTP {response.status} "
                             f"{response.body[:300]!r}")  # fmt: skip
    return response.body.decode(errors="replace")


@contextlib.contextmanager
def fresh_namespace(
    cluster: LocalCluster, prefix: str = "t", labels: dict[str, str] | None = None
) -> Iterator[str]:
    """A new namespace whose ``default`` ServiceAccount exists (pods need it), deleted
    afterwards without waiting, our kinds' objects in it first (``let_go``)."""
    client = shared_client(cluster)
    name = f"{prefix}-{uuid.uuid4().hex[:10]}"
    metadata: dict[str, Any] = {"name": name, **({"labels": labels} if labels else {})}
    client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": metadata})
    deadline = time.monotonic() + 60
    while True:
        try:
            client.get(SERVICE_ACCOUNT, "default", name)
            break
        except NotFound:
            if time.monotonic() > deadline:
                raise TimeoutError(f"ServiceAccount {name}/default was never created") from None
            time.sleep(0.1)
    try:
        yield name
    finally:
        delete_namespace(cluster, name)


def delete_namespace(cluster: LocalCluster, name: str) -> None:
    """Delete a test's namespace without waiting, our kinds' objects in it first
    (``let_go``); an error is ignored: a namespace left behind fails no test, and one
    that ``let_go`` could not clear is still deleted."""
    client = shared_client(cluster)
    with contextlib.suppress(ApiError):
        let_go(client, name)
    with contextlib.suppress(ApiError):
        client.delete(NAMESPACE, name)


OUR_KINDS: tuple[ResourceKind, ...] = (RAY_CLUSTER, RAY_JOB, RAY_SERVICE, RAY_CRON_JOB)


def let_go(client: KubeClient, namespace: str) -> None:
    """Delete the objects of our kinds in ``namespace`` and drop their finalizers.

    A test's operator is often gone by the time its namespace is deleted, and nothing
    else removes ``ray.io/rayjob-finalizer`` and its like: the namespace would stay
    Terminating for the rest of the session, and kube-controller-manager retries every
    such namespace every few seconds with a list and a delete-collection of every
    namespaced resource (a RayJob module alone left two of its eight so)."""
    for kind in OUR_KINDS:
        try:
            left = client.list(kind, namespace)["items"]
        except NotFound:  # the CRD is not installed on this control plane
            continue
        for obj in left:
            with contextlib.suppress(NotFound):
                client.delete(kind, obj["metadata"]["name"], namespace)
                client.patch(kind, obj["metadata"]["name"], namespace,
                             {"metadata": {"finalizers": None}})  # fmt: skip


def edit(client: KubeClient, kind: ResourceKind, name: str, namespace: str,
         change: Callable[[Object], None], *, timeout: float = 30.0) -> Object:  # fmt: skip
    """A user's edit of a stored object: read it, ``change`` it, write it; read and
    written again while the operator's own writes (status, finalizers) move it meanwhile
    (a 409, seen on loaded CI runs). The object as stored."""
    stored: list[Object] = []

    def written() -> bool:
        found = client.get(kind, name, namespace)
        change(found)
        try:
            stored.append(client.update(found))
        except Conflict:
            return False
        return True

    wait_for(f"{kind.kind} {namespace}/{name} edited", written, timeout=timeout)
    return stored[-1]
