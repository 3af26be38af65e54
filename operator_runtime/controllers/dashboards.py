"""How the controllers reach a cluster's Ray dashboard (RayJob now, RayService next).

Two addressings, as in KubeRay: directly at ``<head-svc>.<ns>.svc.<domain>:<port>``
(the RayJob's ``status.dashboardURL``), or with ``--use-kubernetes-proxy`` through the
API server's service proxy, as the operator's own identity. One ``DashboardPool`` per
controller holds one bounded connection pool for every head; a cluster's token (``authOptions.mode:
token``) is read from its Secret by name on each use, never cached in bulk.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Final

import httpx

from operator_runtime.clients import (
    Addressing,
    DashboardClient,
    DashboardPool,
    ServeProxyClient,
    dashboard_endpoint,
    direct_endpoint,
    serve_proxy_endpoint,
)
from operator_runtime.render import USE_KUBERNETES_PROXY, Permission
from operator_runtime.render.names import check_name
from operator_runtime.runtime import kinds
from operator_runtime.runtime.cache import Cache
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.context import ControllerContext
from operator_runtime.runtime.errors import NotFound, TemporaryError, TransportError
from operator_runtime.runtime.kinds import Object

AUTH_TOKEN_KEY: Final = "auth_token"
DASHBOARD_PORT_NAME: Final = "dashboard"


def needs(controller: str) -> tuple[Permission, ...]:
    """What reaching a dashboard takes: the token Secret by name, and the proxy."""
    return (
        Permission(controller, "", ("secrets",), ("get",), "a token-auth cluster's token"),
        Permission(controller, "", ("services/proxy",), ("get", "create"),
                   "the dashboard through the API server", USE_KUBERNETES_PROXY),
    )  # fmt: skip


class _FreshCredentials(httpx.Auth):
    """Adds the API server credentials, asked for on each request (tokens rotate)."""

    def __init__(self, headers: Callable[[], list[tuple[str, str]]]) -> None:
        self._headers = headers

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        try:
            request.headers.update(self._headers())
        except TransportError as exc:
            # No credential, no request: to the dashboard client, a connection that
            # could not be made (it already handles those).
            raise httpx.ConnectError(str(exc), request=request) from exc
        yield request


@dataclass
class Dashboards:
    pool: DashboardPool
    client: KubeClient
    addressing: Addressing = Addressing.DIRECT
    api_server_url: str = ""

    @classmethod
    def from_context(cls, context: ControllerContext) -> Dashboards:
        access = context.api_server
        if not context.use_kubernetes_proxy:
            return cls(DashboardPool(), context.client)
        if access is None:
            raise ValueError("--use-kubernetes-proxy needs the API server's address")
        pool = DashboardPool(verify=access.tls, auth=_FreshCredentials(access.headers))
        return cls(pool, context.client, Addressing.KUBERNETES_PROXY, access.url)

    def for_cluster(self, cluster: Object, dashboard_url: str) -> DashboardClient:
        """The dashboard of ``cluster`` (known as ``dashboard_url`` = host:port)."""
        metadata = cluster.get("metadata") or {}
        if self.addressing is Addressing.DIRECT:
            endpoint = direct_endpoint(dashboard_url)
        else:
            head = ((cluster.get("status") or {}).get("head") or {}).get("serviceName")
            head_service = str(head or _head_service_name(cluster))
            namespace = str(metadata.get("namespace") or "")
            # The service proxy URL is a path too: the same names as a request's.
            kinds.SERVICE.check(namespace, head_service)
            endpoint = dashboard_endpoint(
                addressing=self.addressing,
                head_service=head_service,
                namespace=namespace,
                api_server=self.api_server_url,
                port=DASHBOARD_PORT_NAME,
            )
        return self.pool.dashboard(endpoint, token=self._token(cluster))

    def head_url(self, cluster: Object, services: Cache, cluster_domain: str) -> str:
        """``<head-svc>.<ns>.svc.<domain>:<port>`` from the cluster's head Service's
        "dashboard" port (KubeRay's ``FetchHeadServiceURL``); the cache first, then a GET
        for a Service the cache has not seen yet."""
        namespace = str(cluster["metadata"].get("namespace") or "")
        name = _head_service_name(cluster)
        service = services.get(namespace, name)
        if service is None:
            try:
                service = self.client.get(kinds.SERVICE, name, namespace)
            except NotFound:
                raise TemporaryError(
                    f"head Service {namespace}/{name} does not exist yet"
                ) from None
        for port in (service.get("spec") or {}).get("ports") or ():
            if port.get("name") == DASHBOARD_PORT_NAME:
                return f"{name}.{namespace}.svc.{cluster_domain}:{port.get('port')}"
        raise TemporaryError(f"head Service {namespace}/{name} has no {DASHBOARD_PORT_NAME!r} port")

    def serve_proxy(self, pod: Object, port: int) -> ServeProxyClient:
        """A pod's serve proxy (``/-/healthz``): by its IP, or through the API server."""
        metadata = pod.get("metadata") or {}
        endpoint = serve_proxy_endpoint(
            addressing=self.addressing,
            pod_ip=str((pod.get("status") or {}).get("podIP") or ""),
            pod_name=str(metadata.get("name") or ""),
            namespace=str(metadata.get("namespace") or ""),
            api_server=self.api_server_url,
            port=port,
        )
        return self.pool.serve_proxy(endpoint)

    def _token(self, cluster: Object) -> str | None:
        options = (cluster.get("spec") or {}).get("authOptions") or {}
        if options.get("mode") != "token":
            return None
        metadata = cluster["metadata"]
        name = options.get("secretName") or check_name(str(metadata["name"]))
        secret = self.client.get(kinds.SECRET, name, metadata.get("namespace"))
        encoded = (secret.get("data") or {}).get(AUTH_TOKEN_KEY)
        if encoded:
            try:
                return base64.b64decode(str(encoded), validate=True).decode()
            except (binascii.Error, UnicodeDecodeError):
                pass
        raise TemporaryError(f"Secret {metadata.get('namespace')}/{name} has no usable "
                             f"{AUTH_TOKEN_KEY!r}")  # fmt: skip

    def close(self) -> None:
        self.pool.close()


def _head_service_name(cluster: Object) -> str:
    """KubeRay's GenerateHeadServiceName for a RayCluster: a custom ``headService`` name,
    else ``<cluster>-head-svc``."""
    spec = (cluster.get("spec") or {}).get("headGroupSpec") or {}
    named = ((spec.get("headService") or {}).get("metadata") or {}).get("name")
    return str(named or f"{cluster['metadata']['name']}-head-svc")
