"""The Ray dashboard's Jobs and Serve REST APIs, and the serve proxy's health probe.

A controller asks a ``DashboardPool`` for a ``DashboardClient`` of one head
(``pool.dashboard(endpoint)``), makes its calls, and drops the client: the pool keeps
one ``httpx.Client`` (one connection pool) per base URL for the life of the operator,
so a reconcile never pays for a new connection pool, and the operator closes them all
once, at shutdown (``pool.close()``), or one head's when its cluster goes
(``pool.discard(url)``).

Two ways to reach a head (``Addressing``): directly, by the head service's DNS name, as
KubeRay does by default; or with ``--use-kubernetes-proxy`` through the API server's
service proxy, for an operator that runs outside the cluster network. Each has its own
default timeouts, as in KubeRay (2 s direct, 10 s through the proxy).

Every failure is one of the typed errors of ``errors.py``; no httpx exception leaves
this module.
"""

from __future__ import annotations

import ssl
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final, TypeVar
from urllib.parse import quote

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
    "SERVE_PORT",
    "Addressing",
    "DashboardClient",
    "DashboardPool",
    "Endpoint",
    "ServeProxyClient",
    "dashboard_endpoint",
    "direct_endpoint",
    "serve_proxy_endpoint",
]

DASHBOARD_PORT: Final = 8265
SERVE_PORT: Final = 8000
TOKEN_HEADER: Final = "x-ray-authorization"
"""Ray reads the token here as well as in ``Authorization``; that one is left free for
the API server's own credentials in proxy mode."""

_DUPLICATE_MARK: Final = "Please use a different submission_id"
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
    """Where one head (or one serve proxy) answers, and how long to wait for it."""

    base_url: str
    connect_timeout: float
    read_timeout: float

    @property
    def timeout(self) -> httpx.Timeout:
        return httpx.Timeout(
            connect=self.connect_timeout,
            read=self.read_timeout,
            write=self.read_timeout,
            pool=self.connect_timeout,
        )


_TIMEOUTS: Final = {Addressing.DIRECT: (2.0, 2.0), Addressing.KUBERNETES_PROXY: (10.0, 10.0)}


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
    return Endpoint(base, *_TIMEOUTS[addressing])


def direct_endpoint(host_port: str) -> Endpoint:
    """A dashboard at ``host:port`` (a RayJob's ``status.dashboardURL``), reached directly."""
    return Endpoint(f"http://{host_port}", *_TIMEOUTS[Addressing.DIRECT])


def serve_proxy_endpoint(
    *,
    addressing: Addressing,
    pod_ip: str,
    pod_name: str,
    namespace: str,
    api_server: str = "",
    port: int = SERVE_PORT,
) -> Endpoint:
    """A pod's serve proxy: by its IP directly, or through the API server's pod proxy."""
    if addressing is Addressing.DIRECT:
        base = f"http://{pod_ip}:{port}"
    else:
        base = _proxy_base(api_server, namespace, "pods", pod_name, port)
    return Endpoint(base, *_TIMEOUTS[addressing])


def _proxy_base(api_server: str, namespace: str, kind: str, name: str, port: int | str) -> str:
    if not api_server:
        raise ValueError("proxy addressing needs the API server's URL")
    return f"{api_server.rstrip('/')}/api/v1/namespaces/{namespace}/{kind}/{name}:{port}/proxy"


@dataclass
class DashboardPool:
    """One pooled ``httpx.Client`` per base URL, shared by every worker thread.

    ``transport`` replaces the network in pure unit tests; ``verify`` and ``headers`` (or
    ``auth``, for credentials that must be fresh on each request) carry the API server's
    CA and credentials in proxy mode.
    """

    transport: httpx.BaseTransport | None = None
    verify: ssl.SSLContext | bool = True
    headers: Mapping[str, str] = field(default_factory=dict)
    auth: httpx.Auth | None = None
    _clients: dict[str, httpx.Client] = field(default_factory=dict, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _closed: bool = field(default=False, init=False, repr=False)

    def http(self, base_url: str) -> httpx.Client:
        """The shared client of ``base_url``, made on first use."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the dashboard pool is closed")
            client = self._clients.get(base_url)
            if client is None:
                client = httpx.Client(
                    base_url=base_url,
                    transport=self.transport,
                    verify=self.verify,
                    headers=dict(self.headers),
                    auth=self.auth,
                    follow_redirects=False,
                )
                self._clients[base_url] = client
            return client

    def dashboard(self, endpoint: Endpoint, *, token: str | None = None) -> DashboardClient:
        return DashboardClient(self.http(endpoint.base_url), endpoint, token)

    def serve_proxy(self, endpoint: Endpoint) -> ServeProxyClient:
        return ServeProxyClient(self.http(endpoint.base_url), endpoint)

    def discard(self, base_url: str) -> None:
        """Close the connections to one head, e.g. when its cluster is deleted."""
        with self._lock:
            client = self._clients.pop(base_url, None)
        if client is not None:
            client.close()

    def __len__(self) -> int:
        with self._lock:
            return len(self._clients)

    def __enter__(self) -> DashboardPool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            clients, self._clients, self._closed = list(self._clients.values()), {}, True
        for client in clients:
            client.close()


class _Caller:
    def __init__(self, http: httpx.Client, endpoint: Endpoint, token: str | None = None) -> None:
        self._http = http
        self._endpoint = endpoint
        self._headers = {TOKEN_HEADER: f"Bearer {token}"} if token else {}

    def _call(
        self, method: str, path: str, *, body: JsonValue = None, params: Mapping[str, str] = {}
    ) -> httpx.Response:
        url = f"{self._endpoint.base_url}{path}"
        try:
            response = self._http.request(
                method,
                path,
                json=body,
                params=params,
                headers=self._headers,
                timeout=self._endpoint.timeout,
            )
        except httpx.TransportError as error:  # refused, reset, or a timeout
            raise DashboardUnavailable(
                f"{method} {url}: {type(error).__name__}: {error}", url=url
            ) from error
        except httpx.HTTPError as error:
            raise DashboardError(
                f"{method} {url}: {type(error).__name__}: {error}", url=url
            ) from error
        _raise_for_answer(method, url, response)
        return response

    @staticmethod
    def _json(method: str, response: httpx.Response) -> JsonValue:
        try:
            parsed: JsonValue = response.json()
        except ValueError as error:
            url = str(response.request.url)
            raise DashboardError(
                f"{method} {url}: answer is not JSON: {response.text[:200]!r}",
                url=url,
                status_code=response.status_code,
            ) from error
        return parsed


def _raise_for_answer(method: str, url: str, response: httpx.Response) -> None:
    """Map a non-2xx answer to the error a controller branches on."""
    status = response.status_code
    if status < 300:
        return
    text = response.text
    message = f"{method} {url}: {status}: {text[:500]}"
    if status == 404:
        raise DashboardNotFound(message, url=url, status_code=status)
    if _DUPLICATE_MARK in text:
        raise DuplicateSubmission(message, url=url, status_code=status)
    if status in _UNAVAILABLE_STATUSES:
        raise DashboardUnavailable(message, url=url, status_code=status)
    raise DashboardError(message, url=url, status_code=status)


def _segment(job_id: str) -> str:
    """A job id as one path segment: an id with a slash must not reach another route."""
    return quote(job_id, safe="")


class DashboardClient(_Caller):
    """The Jobs and Serve APIs of one head. Cheap: it borrows the pool's connections."""

    def job_info(self, job_id: str) -> JobInfo:
        """Raises ``DashboardNotFound`` for an id the head does not know."""
        return self._parse(JobInfo, "GET", self._call("GET", f"/api/jobs/{_segment(job_id)}"))

    def list_jobs(self) -> list[JobInfo]:
        response = self._call("GET", "/api/jobs/")
        try:
            return _JOB_LIST.validate_python(self._json("GET", response))
        except ValidationError as error:
            raise self._unexpected("GET", response, error) from error

    def submit_job(self, submission: JobSubmission) -> SubmittedJob:
        """Raises ``DuplicateSubmission`` when the submission id is taken."""
        response = self._call("POST", "/api/jobs/", body=submission.body())
        return self._parse(SubmittedJob, "POST", response)

    def job_logs(self, job_id: str) -> str:
        response = self._call("GET", f"/api/jobs/{_segment(job_id)}/logs")
        return self._field("GET", response, "logs", str)

    def stop_job(self, job_id: str) -> bool:
        """Whether the head stopped it; False for a job that had already finished."""
        response = self._call("POST", f"/api/jobs/{_segment(job_id)}/stop")
        return self._field("POST", response, "stopped", bool)

    def delete_job(self, job_id: str) -> bool:
        """Forget a finished job; the head refuses (``DashboardError``) a running one."""
        response = self._call("DELETE", f"/api/jobs/{_segment(job_id)}")
        return self._field("DELETE", response, "deleted", bool)

    def deploy_serve(self, config: Mapping[str, JsonValue]) -> None:
        """Apply a declarative serve config (a RayService's ``serveConfigV2``)."""
        self._call("PUT", "/api/serve/applications/", body=dict(config))

    def serve_details(self) -> ServeDetails:
        response = self._call("GET", "/api/serve/applications/", params={"api_type": "declarative"})
        return self._parse(ServeDetails, "GET", response)

    def _parse(self, model: type[_M], method: str, response: httpx.Response) -> _M:
        try:
            return model.model_validate(self._json(method, response))
        except ValidationError as error:
            raise self._unexpected(method, response, error) from error

    def _field(self, method: str, response: httpx.Response, name: str, kind: type[_T]) -> _T:
        payload = self._json(method, response)
        value = payload.get(name) if isinstance(payload, dict) else None
        if not isinstance(value, kind):
            raise self._unexpected(method, response, f"no {kind.__name__} field {name!r}")
        return value

    @staticmethod
    def _unexpected(method: str, response: httpx.Response, why: object) -> DashboardError:
        url = str(response.request.url)
        return DashboardError(
            f"{method} {url}: unexpected answer ({why}): {response.text[:200]!r}",
            url=url,
            status_code=response.status_code,
        )


class ServeProxyClient(_Caller):
    """One pod's serve proxy (port 8000)."""

    def healthy(self) -> bool:
        """True on 200; False on any other answer; ``DashboardUnavailable`` on none."""
        try:
            self._call("GET", "/-/healthz")
        except DashboardUnavailable as error:
            if error.status_code is None:
                raise
            return False
        except DashboardError:
            return False
        return True
