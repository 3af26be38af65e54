"""The Ray dashboard's Jobs and Serve REST APIs, and the serve proxy's health probe.

A controller asks the operator's one ``DashboardPool`` for a ``DashboardClient`` of one
head (``pool.dashboard(endpoint)``), makes its calls, and drops the client. The pool is
one ``httpx.Client`` over one connection pool for every head: a head's connections are
dropped once they idle past ``KEEPALIVE_EXPIRY`` or its peer closes them (the head
went), and their number is bounded (``MAX_CONNECTIONS``), so nothing grows with the
number of clusters, head pod IPs or RayCronJob runs the operator has ever seen. A
cluster's token travels as a header of each request, never as state of the pool. The
operator closes the pool once, at shutdown (``pool.close()``).

Two ways to reach a head (``Addressing``): directly, by the head service's DNS name
(or a pod's IP), as KubeRay does by default; or with ``--use-kubernetes-proxy`` through
the API server's service proxy, for an operator that runs outside the cluster network.

A head may be hostile (its image is the tenant's) or broken, so every call has a total
deadline, as KubeRay's Go client has (2 s direct, 10 s through the proxy): each socket
operation waits at most what is left of it, so a head that trickles one byte a second,
in its headers or its body, fails the call in time. An answer is read up to a cap (a
few MiB of JSON; a few KiB of health answer) and never decompressed (we ask for
``identity``). Every failure is one of the typed errors of ``errors.py``; no httpx
exception leaves this module, and no error message quotes the head's answer, which can
echo user values (a runtime env, a serve config) into Events.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import ssl
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final, TypeVar
from urllib.parse import quote

import httpcore
import httpx
from pydantic import JsonValue, TypeAdapter, ValidationError

from operator_runtime.clients.errors import (
    DashboardError,
    DashboardNotFound,
    DashboardUnavailable,
    DuplicateSubmission,
)
from operator_runtime.clients.models import (
    JobInfo,
    JobSubmission,
    ServeDetails,
    SubmittedJob,
)

__all__ = [
    "DASHBOARD_PORT",
    "JSON_LIMIT",
    "SERVE_PORT",
    "Addressing",
    "DashboardClient",
    "DashboardPool",
    "Endpoint",
    "ServeProxyClient",
    "dashboard_endpoint",
    "direct_endpoint",
    "serve_proxy_endpoint",
    "url_host",
]

DASHBOARD_PORT: Final = 8265
SERVE_PORT: Final = 8000
TOKEN_HEADER: Final = "x-ray-authorization"
"""Ray reads the token here as well as in ``Authorization``; that one is left free for
the API server's own credentials in proxy mode."""
JSON_LIMIT: Final = 8 * 1024 * 1024
"""The most we read of a Jobs or Serve answer: thousands of jobs' info, or a serve
status of hundreds of applications, fit many times over."""
HEALTH_LIMIT: Final = 4 * 1024
"""The serve proxy's /-/healthz answers "success"."""
MAX_CONNECTIONS: Final = 64
"""Open connections to all heads together (in use or idle); reconcile workers are few."""
KEEPALIVE_EXPIRY: Final = 30.0
"""Seconds an idle connection is kept for the next poll of its head."""

_DUPLICATE_MARK: Final = b"Please use a different submission_id"
_UNAVAILABLE_STATUSES: Final = frozenset({502, 503, 504})
_JOB_LIST: Final = TypeAdapter(list[JobInfo])
_M = TypeVar("_M", JobInfo, SubmittedJob, ServeDetails)
_T = TypeVar("_T", str, bool)


class Addressing(StrEnum):
    DIRECT = "direct"
    """``http://<head-svc>.<ns>.svc.<domain>:<port>``: the operator is in the cluster network."""
    KUBERNETES_PROXY = "kubernetes-proxy"
    """``<apiserver>/api/v1/namespaces/<ns>/services/<head-svc>:<port>/proxy``."""


@dataclass(frozen=True)
class Endpoint:
    """Where one head (or one serve proxy) answers, and how long a whole call may take."""

    base_url: str
    deadline: float
    """Seconds from the start of a call to the last byte of its answer (KubeRay's
    ``http.Client.Timeout``)."""


_DEADLINES: Final = {Addressing.DIRECT: 2.0, Addressing.KUBERNETES_PROXY: 10.0}


def url_host(host: str) -> str:
    """``host`` as it goes into a URL's authority: an IPv6 address in brackets."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    return f"[{address}]" if address.version == 6 else host


def dashboard_endpoint(
    *,
    addressing: Addressing,
    head_service: str,
    namespace: str,
    cluster_domain: str = "cluster.local",
    api_server: str = "",
    port: int | str = DASHBOARD_PORT,
) -> Endpoint:
    """The dashboard of the head behind ``head_service`` (a name ``render`` computes).

    In proxy mode ``port`` is the service port's name (``dashboard``) or number.
    """
    if addressing is Addressing.DIRECT:
        base = f"http://{head_service}.{namespace}.svc.{cluster_domain}:{port}"
    else:
        base = _proxy_base(api_server, namespace, "services", head_service, port)
    return Endpoint(base, _DEADLINES[addressing])


def direct_endpoint(host_port: str) -> Endpoint:
    """A dashboard at ``host:port`` (a RayJob's ``status.dashboardURL``), reached directly."""
    return Endpoint(f"http://{host_port}", _DEADLINES[Addressing.DIRECT])


def serve_proxy_endpoint(
    *,
    addressing: Addressing,
    pod_ip: str,
    pod_name: str,
    namespace: str,
    api_server: str = "",
    port: int = SERVE_PORT,
) -> Endpoint:
    """A pod's serve proxy: by its IP (v4 or v6) directly, or through the API server's
    pod proxy."""
    if addressing is Addressing.DIRECT:
        base = f"http://{url_host(pod_ip)}:{port}"
    else:
        base = _proxy_base(api_server, namespace, "pods", pod_name, port)
    return Endpoint(base, _DEADLINES[addressing])


def _proxy_base(api_server: str, namespace: str, kind: str, name: str, port: int | str) -> str:
    if not api_server:
        raise ValueError("proxy addressing needs the API server's URL")
    return f"{api_server.rstrip('/')}/api/v1/namespaces/{namespace}/{kind}/{name}:{port}/proxy"


# --- the deadline ------------------------------------------------------------------
#
# httpx's timeouts bound each socket operation, not a call: a head that sends a byte
# just before each read timeout holds the calling thread forever. The pool's network
# backend bounds every connect, read and write by what is left of the calling thread's
# deadline (a context variable, so each reconcile worker has its own).

_DEADLINE: ContextVar[float | None] = ContextVar("dashboard_deadline", default=None)


@contextmanager
def _deadline(seconds: float) -> Iterator[float]:
    at = time.monotonic() + seconds
    token = _DEADLINE.set(at)
    try:
        yield at
    finally:
        _DEADLINE.reset(token)


def _left(timeout: float | None, expired: type[Exception]) -> float | None:
    """``timeout`` cut to the time left before the deadline; ``expired`` once it passed."""
    at = _DEADLINE.get()
    if at is None:
        return timeout
    left = at - time.monotonic()
    if left <= 0:
        raise expired("the call's deadline passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        bounded = _left(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, bounded))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    def __init__(self) -> None:
        self._inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        bounded = _left(timeout, httpcore.ConnectTimeout)
        stream = self._inner.connect_tcp(host, port, bounded, local_address, socket_options)
        return _DeadlineStream(stream)

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        bounded = _left(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.connect_unix_socket(path, bounded, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


@functools.cache
def _default_context(verify: bool) -> ssl.SSLContext:
    """The TLS context of a pool given no CA of its own, made once per process: making
    one reads the whole CA bundle (some 13 ms of CPU), and a context only wraps sockets,
    which many threads and pools may do with one."""
    return httpx.create_ssl_context(verify=verify, trust_env=False)


class _Transport(httpx.HTTPTransport):
    """httpx's own transport over a connection pool whose sockets keep the deadline.

    httpx takes no network backend, so the pool it made is replaced by one that has
    ours (``tests/unit/clients/test_dashboard_hostile.py`` proves it still applies).
    """

    def __init__(self, verify: ssl.SSLContext | bool) -> None:
        context = verify if isinstance(verify, ssl.SSLContext) else _default_context(verify)
        super().__init__(verify=context, trust_env=False)
        self.connections = httpcore.ConnectionPool(
            ssl_context=context,
            max_connections=MAX_CONNECTIONS,
            max_keepalive_connections=MAX_CONNECTIONS,
            keepalive_expiry=KEEPALIVE_EXPIRY,
            network_backend=_DeadlineBackend(),
        )
        self._pool = self.connections


@dataclass
class DashboardPool:
    """The operator's one HTTP client for every head, shared by every worker thread.

    ``transport`` replaces the network in pure unit tests; ``verify`` and ``headers`` (or
    ``auth``, for credentials that must be fresh on each request) carry the API server's
    CA and credentials in proxy mode, the same for every head. Proxies from the
    environment (``HTTP_PROXY``) are not used: a call must stay on our sockets to keep
    its deadline.
    """

    transport: httpx.BaseTransport | None = None
    verify: ssl.SSLContext | bool = True
    headers: Mapping[str, str] = field(default_factory=dict)
    auth: httpx.Auth | None = None
    _http: httpx.Client | None = field(default=None, init=False, repr=False)
    _network: _Transport | None = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _closed: bool = field(default=False, init=False, repr=False)

    def http(self) -> httpx.Client:
        """The shared client, made on first use."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the dashboard pool is closed")
            if self._http is None:
                transport = self.transport
                if transport is None:
                    transport = self._network = _Transport(self.verify)
                self._http = httpx.Client(
                    transport=transport,
                    headers={"accept-encoding": "identity", **self.headers},
                    auth=self.auth,
                    follow_redirects=False,
                    trust_env=False,
                )
            return self._http

    def dashboard(self, endpoint: Endpoint, *, token: str | None = None) -> DashboardClient:
        return DashboardClient(self.http(), endpoint, token)

    def serve_proxy(self, endpoint: Endpoint) -> ServeProxyClient:
        return ServeProxyClient(self.http(), endpoint)

    def connections(self) -> int:
        """Connections open to heads now (in use or idle): what the pool holds."""
        network = self._network
        return 0 if network is None else len(network.connections.connections)

    def __enter__(self) -> DashboardPool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            http, self._http, self._network, self._closed = self._http, None, None, True
        if http is not None:
            http.close()


@dataclass(frozen=True)
class _Answer:
    """A head's answer, read whole (up to the call's cap)."""

    method: str
    url: str
    status_code: int
    body: bytes

    def json(self) -> JsonValue:
        try:
            parsed: JsonValue = json.loads(self.body)
        except (ValueError, RecursionError) as error:  # RecursionError: nesting bomb
            raise self.unexpected("the answer is not JSON") from error
        return parsed

    def unexpected(self, why: str) -> DashboardError:
        return DashboardError(
            f"{self.method} {self.url}: unexpected answer ({why})",
            url=self.url,
            status_code=self.status_code,
        )


class _Caller:
    def __init__(self, http: httpx.Client, endpoint: Endpoint, token: str | None = None) -> None:
        self._http = http
        self._endpoint = endpoint
        self._headers = {TOKEN_HEADER: f"Bearer {token}"} if token else {}

    def _call(
        self,
        method: str,
        path: str,
        *,
        body: JsonValue = None,
        params: Mapping[str, str] = {},
        limit: int = JSON_LIMIT,
    ) -> _Answer:
        url = f"{self._endpoint.base_url}{path}"
        seconds = self._endpoint.deadline
        try:
            with _deadline(seconds) as at:
                answer = self._exchange(method, url, body, params, limit, at)
        except DashboardError:
            raise
        except httpx.TimeoutException as error:
            raise DashboardUnavailable(
                f"{method} {url}: no answer within {seconds:g} s ({type(error).__name__})",
                url=url,
            ) from error
        except httpx.TransportError as error:  # refused, reset, unresolvable
            raise DashboardUnavailable(
                f"{method} {url}: {type(error).__name__}: {error}", url=url
            ) from error
        except (httpx.HTTPError, httpx.InvalidURL, httpx.StreamError, ValueError) as error:
            # ValueError: a URL or header httpx cannot encode (a token, a pod IP).
            raise DashboardError(f"{method} {url}: {type(error).__name__}", url=url) from error
        _raise_for_answer(answer)
        return answer

    def _exchange(
        self,
        method: str,
        url: str,
        body: JsonValue,
        params: Mapping[str, str],
        limit: int,
        at: float,
    ) -> _Answer:
        left = max(at - time.monotonic(), 0.001)
        request = self._http.build_request(
            method,
            url,
            json=body,
            params=params,
            headers=self._headers,
            timeout=httpx.Timeout(left),
        )
        response = self._http.send(request, stream=True)
        try:
            encoding = response.headers.get("content-encoding", "identity").strip().lower()
            if encoding not in ("", "identity"):
                raise DashboardError(
                    f"{method} {url}: answer encoded as {encoding[:40]!r}, asked for identity",
                    url=url,
                    status_code=response.status_code,
                )
            chunks: list[bytes] = []
            size = 0
            for chunk in response.iter_bytes():  # identity: the bytes as sent
                size += len(chunk)
                if size > limit:
                    raise DashboardError(
                        f"{method} {url}: answer larger than {limit} bytes",
                        url=url,
                        status_code=response.status_code,
                    )
                chunks.append(chunk)
                if time.monotonic() > at:
                    raise httpx.ReadTimeout("the call's deadline passed", request=request)
        finally:
            response.close()
        return _Answer(method, url, response.status_code, b"".join(chunks))


def _raise_for_answer(answer: _Answer) -> None:
    """Map a non-2xx answer to the error a controller branches on. The answer's text
    stays out of the message: Ray echoes input values (a runtime env, a serve config,
    an entrypoint) in its errors, and the message reaches Events and status."""
    status = answer.status_code
    if status < 300:
        return
    message = f"{answer.method} {answer.url}: HTTP {status}"
    url = answer.url
    if status == 404:
        raise DashboardNotFound(message, url=url, status_code=status)
    if _DUPLICATE_MARK in answer.body:
        raise DuplicateSubmission(message, url=url, status_code=status)
    if status in _UNAVAILABLE_STATUSES:
        raise DashboardUnavailable(message, url=url, status_code=status)
    raise DashboardError(message, url=url, status_code=status)


def _segment(job_id: str) -> str:
    """A job id as one path segment: an id with a slash must not reach another route."""
    return quote(job_id, safe="")


def _validation(error: ValidationError) -> str:
    """Where the answer does not fit, without its values."""
    problems = (
        f"{'.'.join(str(part) for part in e['loc']) or '<root>'}: {e['msg']}"
        for e in error.errors(include_url=False, include_input=False, include_context=False)
    )
    return "; ".join(list(problems)[:5])


class DashboardClient(_Caller):
    """The Jobs and Serve APIs of one head. Cheap: it borrows the pool's connections."""

    def job_info(self, job_id: str) -> JobInfo:
        """Raises ``DashboardNotFound`` for an id the head does not know."""
        return self._parse(JobInfo, self._call("GET", f"/api/jobs/{_segment(job_id)}"))

    def list_jobs(self) -> list[JobInfo]:
        answer = self._call("GET", "/api/jobs/")
        try:
            return _JOB_LIST.validate_python(answer.json())
        except ValidationError as error:
            raise answer.unexpected(_validation(error)) from error

    def submit_job(self, submission: JobSubmission) -> SubmittedJob:
        """Raises ``DuplicateSubmission`` when the submission id is taken."""
        return self._parse(SubmittedJob, self._call("POST", "/api/jobs/", body=submission.body()))

    def job_logs(self, job_id: str) -> str:
        """The job's logs, if they fit in ``JSON_LIMIT``."""
        answer = self._call("GET", f"/api/jobs/{_segment(job_id)}/logs")
        return self._field(answer, "logs", str)

    def stop_job(self, job_id: str) -> bool:
        """Whether the head stopped it; False for a job that had already finished."""
        answer = self._call("POST", f"/api/jobs/{_segment(job_id)}/stop")
        return self._field(answer, "stopped", bool)

    def delete_job(self, job_id: str) -> bool:
        """Forget a finished job; the head refuses (``DashboardError``) a running one."""
        answer = self._call("DELETE", f"/api/jobs/{_segment(job_id)}")
        return self._field(answer, "deleted", bool)

    def deploy_serve(self, config: Mapping[str, JsonValue]) -> None:
        """Apply a declarative serve config (a RayService's ``serveConfigV2``)."""
        self._call("PUT", "/api/serve/applications/", body=dict(config))

    def serve_details(self) -> ServeDetails:
        answer = self._call("GET", "/api/serve/applications/", params={"api_type": "declarative"})
        return self._parse(ServeDetails, answer)

    @staticmethod
    def _parse(model: type[_M], answer: _Answer) -> _M:
        try:
            return model.model_validate(answer.json())
        except ValidationError as error:
            raise answer.unexpected(_validation(error)) from error

    @staticmethod
    def _field(answer: _Answer, name: str, kind: type[_T]) -> _T:
        payload = answer.json()
        value = payload.get(name) if isinstance(payload, dict) else None
        if not isinstance(value, kind):
            raise answer.unexpected(f"no {kind.__name__} field {name!r}")
        return value


class ServeProxyClient(_Caller):
    """One pod's serve proxy (port 8000)."""

    def healthy(self) -> bool:
        """True on 200; False on any other answer; ``DashboardUnavailable`` on none."""
        try:
            self._call("GET", "/-/healthz", limit=HEALTH_LIMIT)
        except DashboardUnavailable as error:
            if error.status_code is None:
                raise
            return False
        except DashboardError:
            return False
        return True
