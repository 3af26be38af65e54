"""A fault-injecting proxy in front of the test control plane's kube-apiserver.

Design. The API server speaks only TLS, so a byte-level TCP relay could pause, slow or
cut a connection but never tell a Lease renewal from a pod create, nor answer "504"
after the server has committed a write. This proxy therefore terminates TLS itself:
it listens on loopback with the cluster's own serving certificate (issued for
127.0.0.1 by the cluster CA, so clients verify it exactly as they verify the real
server) and forwards every request, one upstream connection per client connection,
to the real kube-apiserver with the admin client certificate (or, with
``client_identity``, with none: the client's own bearer token then decides who it is and
what it may do, e.g. an operator's ServiceAccount). The operator under test
is the unmodified operator, pointed at ``proxy.kubeconfig``; the request still reaches
and is served by the real API server, with its admission, storage and watch cache.
Only what the test asks for is changed on the way:

- ``pause(match)``: matching requests are held unanswered and never forwarded; on
  ``resume()`` their connections are closed. A paused client sees its own timeout;
- ``slow(match, seconds)``: matching requests are forwarded that much later;
- ``answer_after_forward(match, status)``: the request is forwarded and the server's
  real answer thrown away; the client gets ``status`` instead (a 504 after a commit);
  ``cut_after_forward(match)``: the same, but the connection is closed unanswered;
- ``reply(match, status, body)``: answered here, never forwarded (e.g. a watch that
  says 410 Gone);
- ``stall_streams(match)``: streamed answers (watches) already open stop delivering
  bytes, with the connection left open; new streams flow normally;
- ``cut()``: every client connection is closed at once.

``log`` records each request (method, path, query, times, status sent, whether it was
tampered with), so a test measures what reached the server, and when, on wall-clock
time comparable with timestamps the server writes (a Lease's ``acquireTime``).
"""

from __future__ import annotations

import contextlib
import http.client
import http.server
import json
import socket
import socketserver
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hack.localcluster import LocalCluster


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: dict[str, str]
    body: bytes

    @property
    def is_watch(self) -> bool:
        return self.query.get("watch") in ("true", "1")

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


Match = Callable[[Request], bool]


def match(method: str | None = None, path: str | None = None, *, suffix: str | None = None,
          watch: bool | None = None) -> Match:  # fmt: skip
    """A matcher: the method, a path prefix or suffix, whether it is a watch."""

    def test(request: Request) -> bool:
        return (
            (method is None or request.method == method)
            and (path is None or request.path.startswith(path))
            and (suffix is None or request.path.endswith(suffix))
            and (watch is None or request.is_watch == watch)
        )

    return test


@dataclass
class Record:
    request: Request
    started: float
    """Wall-clock time the request arrived at the proxy."""
    forwarded: float | None = None
    """Wall-clock time its server answer arrived (None: never forwarded)."""
    status: int | None = None
    """The status the client got (None: no answer)."""
    upstream_status: int | None = None
    tampered: bool = False


@dataclass
class _Rule:
    match: Match
    kind: str
    status: int = 0
    body: bytes = b""
    seconds: float = 0.0
    times: int | None = None
    """How many requests the rule still applies to (None: every one)."""
    hits: int = 0


@dataclass
class _Stream:
    request: Request
    stalled: threading.Event = field(default_factory=threading.Event)


class FaultProxy:
    """Start with ``with FaultProxy(cluster, tmp_path) as proxy:``."""

    def __init__(
        self, cluster: LocalCluster, state_dir: Path, *, client_identity: bool = False
    ) -> None:
        """``client_identity``: forward each request as its client sent it (its bearer
        token) and present no admin certificate upstream, so the API server
        authenticates and authorizes the client itself (a ServiceAccount's RBAC)."""
        self.cluster = cluster
        self.kubeconfig = state_dir / "proxy-kubeconfig"
        self.log: list[Record] = []
        self._lock = threading.Lock()
        self._rules: list[_Rule] = []
        self._resumed = threading.Event()
        self._resumed.set()
        self._closing = threading.Event()
        self._sockets: set[socket.socket] = set()
        self._streams: list[_Stream] = []
        pki = cluster.pki
        self._server_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._server_tls.load_cert_chain(str(pki.serving_cert), str(pki.serving_key))
        self._upstream_tls = ssl.create_default_context(cafile=str(pki.ca_cert))
        if not client_identity:
            self._upstream_tls.load_cert_chain(str(pki.admin_cert), str(pki.admin_key))
        self._upstream = urllib.parse.urlsplit(cluster.server)
        self._server = _Server(("127.0.0.1", 0), _handler_for(self))
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    # -- lifecycle ---------------------------------------------------------------------

    def __enter__(self) -> FaultProxy:
        config = json.loads(self.cluster.kubeconfig.read_text())
        config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{self.port}"
        self.kubeconfig.write_text(json.dumps(config, indent=2))
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing.set()
        self._resumed.set()
        self._server.shutdown()
        self.cut()
        self._server.server_close()

    # -- faults -----------------------------------------------------------------------

    def pause(self, where: Match) -> None:
        self._add(_Rule(where, "pause"))
        self._resumed.clear()

    def resume(self) -> None:
        with self._lock:
            self._rules = [rule for rule in self._rules if rule.kind != "pause"]
        self._resumed.set()

    def slow(self, where: Match, seconds: float) -> None:
        self._add(_Rule(where, "slow", seconds=seconds))

    def answer_after_forward(self, where: Match, status: int, *, times: int | None = 1) -> None:
        body = json.dumps({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "the server was unable to return a response in the time allotted",
            "reason": "Timeout", "code": status,
        }).encode()  # fmt: skip
        self._add(_Rule(where, "after", status=status, body=body, times=times))

    def cut_after_forward(self, where: Match, *, times: int | None = 1) -> None:
        """Forward, then close the client's connection without any answer."""
        self._add(_Rule(where, "after-cut", times=times))

    def reply(self, where: Match, status: int, body: bytes, *, times: int | None = None) -> None:
        self._add(_Rule(where, "reply", status=status, body=body, times=times))

    def stall_streams(self, where: Match) -> int:
        """Freeze the matching open streams; returns how many were frozen."""
        with self._lock:
            chosen = [s for s in self._streams if where(s.request)]
        for stream in chosen:
            stream.stalled.set()
        return len(chosen)

    def open_streams(self, where: Match) -> int:
        with self._lock:
            return sum(1 for s in self._streams if where(s.request))

    def cut(self) -> None:
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()
        self._resumed.set()

    def records(self, where: Match) -> list[Record]:
        with self._lock:
            return [r for r in self.log if where(r.request)]

    def _add(self, rule: _Rule) -> None:
        with self._lock:
            self._rules.append(rule)

    def _rule_for(self, request: Request) -> _Rule | None:
        with self._lock:
            for rule in self._rules:
                if rule.match(request) and (rule.times is None or rule.hits < rule.times):
                    rule.hits += 1
                    return rule
        return None

    # -- one request ------------------------------------------------------------------

    def _upstream_connection(self) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection(
            self._upstream.hostname or "127.0.0.1", self._upstream.port,
            context=self._upstream_tls, timeout=600,
        )  # fmt: skip


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hung up or a cut connection: expected here


_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host",
               "proxy-connection", "te", "trailer", "upgrade"}  # fmt: skip


def _handler_for(proxy: FaultProxy) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        upstream: http.client.HTTPSConnection | None = None

        def setup(self) -> None:
            raw = self.request
            try:
                self.request = proxy._server_tls.wrap_socket(raw, server_side=True)
            except OSError:
                raw.close()
                raise
            with proxy._lock:
                proxy._sockets.add(self.request)
            super().setup()

        def finish(self) -> None:
            with proxy._lock:
                proxy._sockets.discard(self.request)
            if self.upstream is not None:
                self.upstream.close()
            try:
                super().finish()
            except OSError:
                pass
            finally:
                self.request.close()  # the TLS wrapper owns the descriptor now

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            parsed = urllib.parse.urlsplit(self.path)
            request = Request(self.command, parsed.path,
                              dict(urllib.parse.parse_qsl(parsed.query)), body)  # fmt: skip
            record = Record(request, time.time())
            with proxy._lock:
                proxy.log.append(record)
            rule = proxy._rule_for(request)
            if rule is not None and rule.kind == "pause":
                # Held, then dropped unanswered: the server never sees the request.
                while not proxy._resumed.wait(0.05):
                    pass
                self.close_connection = True
                return
            if rule is not None and rule.kind == "slow":
                time.sleep(rule.seconds)
            if rule is not None and rule.kind == "reply":
                record.tampered = True
                self._send_whole(record, rule.status, {"Content-Type": "application/json"},
                                 rule.body)  # fmt: skip
                return
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
            if body:
                headers["Content-Length"] = str(len(body))
            try:
                upstream = self._forward(request.method, self.path, body, headers)
            except (OSError, http.client.HTTPException):
                self.close_connection = True
                return
            record.forwarded = time.time()
            record.upstream_status = upstream.status
            if rule is not None and rule.kind == "after-cut":
                upstream.read()
                record.tampered = True
                self.close_connection = True
                with contextlib.suppress(OSError):
                    self.request.shutdown(socket.SHUT_RDWR)
                return
            if rule is not None and rule.kind == "after":
                upstream.read()
                record.tampered = True
                self._send_whole(record, rule.status, {"Content-Type": "application/json"},
                                 rule.body)  # fmt: skip
                return
            response_headers = {k: v for k, v in upstream.getheaders()
                                if k.lower() not in _HOP_BY_HOP}  # fmt: skip
            if upstream.getheader("Content-Length") is not None:
                self._send_whole(record, upstream.status, response_headers, upstream.read())
            else:
                self._send_stream(record, upstream, response_headers)

        def _forward(self, method: str, path: str, body: bytes,
                     headers: dict[str, str]) -> http.client.HTTPResponse:  # fmt: skip
            if self.upstream is None:
                self.upstream = proxy._upstream_connection()
            try:
                self.upstream.request(method, path, body=body or None, headers=headers)
                return self.upstream.getresponse()
            except (OSError, http.client.HTTPException):
                self.upstream.close()
                self.upstream = None
                raise

        def _send_whole(self, record: Record, status: int, headers: dict[str, str],
                        body: bytes) -> None:  # fmt: skip
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            record.status = status

        def _send_stream(self, record: Record, upstream: http.client.HTTPResponse,
                         headers: dict[str, str]) -> None:  # fmt: skip
            stream = _Stream(record.request)
            with proxy._lock:
                proxy._streams.append(stream)
            self.send_response(upstream.status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            record.status = upstream.status
            self.close_connection = True  # the upstream connection is not reusable after
            try:
                while not stream.stalled.is_set():
                    chunk = upstream.read1(65536)
                    if stream.stalled.is_set():
                        break
                    if not chunk:
                        self.wfile.write(b"0\r\n\r\n")
                        return
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
                # Stalled: the client's socket stays open and silent until it gives up.
                while not proxy._closing.is_set() and _peer_open(self.request):
                    time.sleep(0.1)
            except (OSError, http.client.HTTPException):
                pass
            finally:
                with proxy._lock:
                    proxy._streams.remove(stream)
                if self.upstream is not None:
                    self.upstream.close()
                    self.upstream = None

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

    return Handler


def _peer_open(sock: socket.socket) -> bool:
    """False once the client closed its end (a read would return EOF)."""
    try:
        sock.settimeout(0)
        try:
            return sock.recv(1) != b""
        except (BlockingIOError, ssl.SSLWantReadError):
            return True
        finally:
            sock.settimeout(None)
    except (OSError, ValueError):
        return False
