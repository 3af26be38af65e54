"""HTTP to the API server: the one place that touches sockets.

Where the API server is and who we are to it comes from ``kubeconfig`` (an
``ApiServerConfig``); we speak HTTP through our own urllib3 pool built from it. No
generated client (slow, lossy, and ~44 MiB of memory once imported), and control over
timeouts, streaming and retries.

A request passes the layers of client-go's round-trippers, each small, in this order:
the headers (``Accept``, ``User-Agent``), auth (``Authorization`` from the
``Credentials``), impersonation (``Impersonate-*``), then urllib3's pool for TLS (the
CA, the client certificate, ``tls-server-name``) and the proxy, then the socket. Every
failure below the API, in any layer, is a ``TransportError`` that says whether the
request may have been sent, so callers handle one error for "no answer".

``Transport`` is a protocol so unit tests can answer requests from a fake without
monkeypatching.
"""

from __future__ import annotations

import contextlib
import dataclasses
import ssl
import threading
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import urllib3
from pydantic_core import from_json

from operator_runtime.runtime import kubeconfig as kubeconfig_module
from operator_runtime.runtime.credentials import Credential, CredentialError
from operator_runtime.runtime.errors import TransportError
from operator_runtime.runtime.kubeconfig import (
    ApiServerConfig,
    KubeconfigError,
    proxy_from_environment,
)


@dataclass(frozen=True)
class ApiServerAccess:
    """How another HTTP client reaches the API server as the operator does: its URL,
    its TLS (CA, client certificate) and fresh credentials per request.

    ``--use-kubernetes-proxy`` needs it: the Ray dashboards are then reached through
    the API server's service proxy, with the operator's own identity (impersonation
    included)."""

    url: str
    tls: ssl.SSLContext
    headers: Callable[[], list[tuple[str, str]]]
    """The credential and impersonation headers (a name may repeat), asked for per
    request, so a rotated service-account token or an exec plugin's refreshed one is
    used as soon as it is read; raises ``TransportError`` when no credential can be
    produced."""


@dataclass
class Response:
    """A fully read HTTP response."""

    status: int
    body: bytes
    headers: Mapping[str, str] = field(default_factory=dict)

    def json(self) -> Any:
        return decode_json(self.body) if self.body else None


def decode_json(data: bytes) -> Any:
    """JSON from the API server: pydantic-core's parser (already loaded for the API
    models), about twice as fast as ``json.loads`` on a pod. Decoding watch events and
    created objects was a tenth of the operator's CPU in the 100 x 100 benchmark
    (benchmarks/README.md). It refuses a lone surrogate escape, which the API server
    never writes (Go's encoder writes U+FFFD instead); errors are ``ValueError``s, as
    ``json.loads``'s are."""
    return from_json(data, cache_strings="keys")


class Stream(Protocol):
    """A streamed response (watch): status first, then lines as they arrive."""

    status: int

    def lines(self) -> Iterator[bytes]: ...

    def read_all(self) -> bytes: ...

    def close(self) -> None: ...


class Transport(Protocol):
    def request(
        self,
        method: str,
        path: str,
        *,
        query: list[tuple[str, str]],
        body: bytes | None,
        headers: dict[str, str],
        timeout: tuple[float, float],
    ) -> Response: ...

    def stream(
        self,
        path: str,
        *,
        query: list[tuple[str, str]],
        timeout: tuple[float, float],
    ) -> Stream: ...


class _UrllibStream:
    def __init__(self, response: urllib3.BaseHTTPResponse) -> None:
        self._response = response
        self.status = response.status

    def lines(self) -> Iterator[bytes]:
        pending = b""
        try:
            for chunk in self._response.stream(64 * 1024, decode_content=True):
                pending += chunk
                if b"\n" not in chunk:
                    continue
                # One split per chunk: splitting a line off at a time copied the rest of
                # a 64 KiB chunk once per event in it.
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if line.strip():
                        yield line
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise TransportError(f"watch stream broke: {exc}") from exc
        except (AttributeError, ValueError) as exc:
            # http.client's way of saying close() ran on another thread mid-read.
            raise TransportError(f"watch stream closed: {exc}") from exc
        if pending.strip():
            yield pending

    def read_all(self) -> bytes:
        try:
            return self._response.read()
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise TransportError(str(exc)) from exc

    def close(self) -> None:
        # shutdown() unblocks a reader parked in another thread (stop during a quiet
        # watch); the half-read connection is then dropped, never returned to the pool.
        shutdown = getattr(self._response, "shutdown", None)
        if shutdown is not None:
            # Raises when the stream already ended and urllib3 took the connection back.
            with contextlib.suppress(ValueError, RuntimeError, OSError):
                shutdown()
        # The reader thread may be closing the same response as it unwinds: http.client
        # then says "I/O operation on closed file". Closed either way; a stop must not crash.
        with contextlib.suppress(ValueError, OSError):
            self._response.close()


class UrllibTransport:
    """``Transport`` over a urllib3 pool with the TLS and credentials of an
    ``ApiServerConfig``."""

    def __init__(self, configuration: ApiServerConfig, *, pool_size: int = 64) -> None:
        self._configuration = configuration
        self._pool_size = pool_size
        self.base_url = configuration.server.rstrip("/")
        self._path_prefix = urllib.parse.urlsplit(self.base_url).path
        self._pools = _Pools.build(configuration, self.base_url, pool_size)
        self._pools_lock = threading.Lock()
        self._impersonation = list(configuration.impersonation)
        names = [name for name, _ in self._impersonation]
        self._repeated_headers = len(set(names)) < len(names)

    def _credential(self) -> Credential:
        """The auth layer's credential for one request.

        A credential that cannot be produced (an exec plugin failing, a token file
        gone) is a failure below the API like a refused connection, and nothing was
        sent: ``TransportError(maybe_sent=False)``, which the Lease renewal, the
        informers and the client's retries already handle (client-go's round-tripper
        returns it as an ordinary error too)."""
        try:
            return self._configuration.credentials.current()
        except CredentialError as exc:
            raise TransportError(f"credentials: {exc}", maybe_sent=False) from exc

    def _credentials(self) -> list[tuple[str, str]]:
        """The auth layer, then the impersonation layer: ``Authorization`` (the
        operator's own identity) and the ``Impersonate-*`` headers of who it acts as."""
        value = self._credential().authorization
        authorization = [("Authorization", value)] if value else []
        return authorization + self._impersonation

    def _headers(self, credential: Credential, extra: dict[str, str]) -> Mapping[str, str]:
        headers: dict[str, str] | urllib3.HTTPHeaderDict
        # A plain dict unless a name repeats (several groups to impersonate): the
        # common path stays as cheap as it was.
        headers = urllib3.HTTPHeaderDict() if self._repeated_headers else {}
        headers["Accept"] = "application/json"
        headers["User-Agent"] = "ray-operator (python)"
        if credential.authorization:
            headers["Authorization"] = credential.authorization
        for name, value in self._impersonation:
            if isinstance(headers, urllib3.HTTPHeaderDict):
                headers.add(name, value)
            else:
                headers[name] = value
        headers.update(extra)
        return headers

    def _pools_for(self, credential: Credential) -> _Pools:
        """The TLS layer: the pools whose connections show ``credential``'s client
        certificate. A certificate an exec plugin printed since (rotated before it
        expired, or after a 401) gets new pools; connections of the old ones finish
        what they carry and are closed."""
        pools = self._pools
        certificate = credential.client_certificate
        if (certificate is None or certificate is pools.certificate
                or not self._configuration.rotate_client_certificate):  # fmt: skip
            return pools
        with self._pools_lock:
            pools = self._pools
            if certificate != pools.certificate:
                rotated = dataclasses.replace(self._configuration,
                                              client_certificate=certificate,
                                              client_key=credential.client_key)  # fmt: skip
                try:
                    fresh = _Pools.build(rotated, self.base_url, self._pool_size)
                except KubeconfigError as exc:
                    raise TransportError(f"exec plugin certificate: {exc}",
                                         maybe_sent=False) from exc  # fmt: skip
                self._pools, stale = fresh, pools
                stale.manager.clear()
                pools = fresh
        return pools

    def api_server_access(self) -> ApiServerAccess:
        """This transport's URL, TLS and credentials, for a client of another library."""
        return ApiServerAccess(self.base_url, self._configuration.ssl_context(), self._credentials)

    @staticmethod
    def _target(path: str, query: list[tuple[str, str]]) -> str:
        """``path`` with its query string, below the server's URL."""
        return f"{path}?{urllib.parse.urlencode(query)}" if query else path

    def request(
        self,
        method: str,
        path: str,
        *,
        query: list[tuple[str, str]],
        body: bytes | None,
        headers: dict[str, str],
        timeout: tuple[float, float],
    ) -> Response:
        raw = self._send(method, path, query, body, headers, timeout, preload=True)
        return Response(raw.status, raw.data, raw.headers)

    def stream(
        self,
        path: str,
        *,
        query: list[tuple[str, str]],
        timeout: tuple[float, float],
    ) -> Stream:
        return _UrllibStream(self._send("GET", path, query, None, {}, timeout, preload=False))

    def _send(
        self,
        method: str,
        path: str,
        query: list[tuple[str, str]],
        body: bytes | None,
        headers: dict[str, str],
        timeout: tuple[float, float],
        *,
        preload: bool,
    ) -> urllib3.BaseHTTPResponse:
        """One attempt (retries are the client's business); every failure below the
        API (credentials, TLS, proxy, socket) becomes ``TransportError``. Without
        ``preload`` the body is left for the caller to stream."""
        try:
            credential = self._credential()
            pools = self._pools_for(credential)
        except TransportError as exc:
            raise TransportError(f"{method} {path}: {exc}", maybe_sent=False) from exc
        options: dict[str, Any] = {
            "body": body,
            "headers": self._headers(credential, headers),
            "timeout": urllib3.Timeout(connect=timeout[0], read=timeout[1]),
            "retries": False,
            "preload_content": preload,
        }
        try:
            target = self._target(path, query)
            if pools.server is None:
                response = pools.manager.request(method, self.base_url + target, **options)
            else:
                response = pools.server.urlopen(method, self._path_prefix + target, **options)
        except urllib3.exceptions.ConnectTimeoutError as exc:  # also refused, unresolved
            # No connection, so no request: safe to send again, even a create.
            raise TransportError(f"{method} {path}: {exc}", maybe_sent=False) from exc
        except ValueError as exc:
            # http.client refusing a header value (a token an exec plugin printed with a
            # line break in it) before a byte was sent.
            raise TransportError(f"{method} {path}: {exc}", maybe_sent=False) from exc
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise TransportError(f"{method} {path}: {exc}") from exc
        if response.status == 401:
            # A cached exec credential the server no longer takes: the next request
            # fetches a fresh one (client-go does the same), unless it already has.
            self._configuration.credentials.rejected(credential)
        return response


@dataclass(frozen=True)
class _Pools:
    """The connection pools for one client certificate, replaced whole on rotation."""

    manager: urllib3.PoolManager
    server: urllib3.HTTPConnectionPool | None
    """Every request goes to one server: without a proxy, its connection pool is
    called directly, sparing each request the manager's URL parsing and pool lookup
    (a few percent of the operator's CPU in a burst of pod creates)."""
    certificate: bytes | None

    @classmethod
    def build(cls, configuration: ApiServerConfig, base_url: str, pool_size: int) -> _Pools:
        proxy = configuration.proxy or proxy_from_environment(base_url)
        manager = _pool_manager(configuration, proxy, pool_size)
        server = None if proxy else manager.connection_from_url(base_url)
        return cls(manager, server, configuration.client_certificate)


def _pool_manager(
    configuration: ApiServerConfig, proxy: str | None, pool_size: int
) -> urllib3.PoolManager:
    """The TLS and proxy layers: one TLS context for every connection, the certificate
    checked against ``tls-server-name`` when the kubeconfig sets one; through ``proxy``
    (CONNECT for an https server) when there is one. urllib3 does both."""
    pool_args: dict[str, Any] = {"maxsize": pool_size, "ssl_context": configuration.ssl_context()}
    if configuration.tls_server_name:
        pool_args["server_hostname"] = configuration.tls_server_name
    if not configuration.verify:
        pool_args["cert_reqs"] = ssl.CERT_NONE
        pool_args["assert_hostname"] = False
    if not proxy:
        return urllib3.PoolManager(**pool_args)
    return urllib3.ProxyManager(proxy, **pool_args)


def load_configuration(kubeconfig: str | None) -> ApiServerConfig:
    """The API server from a kubeconfig, else $KUBECONFIG, else in-cluster, else
    ~/.kube/config (``kubeconfig.load_configuration``)."""
    return kubeconfig_module.load_configuration(kubeconfig)
