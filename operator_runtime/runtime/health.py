"""The probe and metrics HTTP endpoints.

``/healthz`` answers 200 while the process runs its loops; ``/readyz`` answers 200 only
once every informer cache has synced (so a rollout waits for a warm replica) and
503 with the names of the failing checks otherwise. ``/metrics`` is served on its own
address (``--metrics-addr``), like controller-runtime, so it can be exposed separately.

The default addresses are KubeRay's (``:8080`` metrics, ``:8082`` probes): every
interface, since the kubelet and Prometheus dial the pod IP. Every connection has a
socket timeout (``REQUEST_TIMEOUT_SECONDS``), so idle or slow clients cannot pile up
threads. docs/operations.md says how to narrow the addresses.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Route = Callable[[], tuple[int, str, bytes]]
"""Returns (status, content type, body)."""
Check = Callable[[], bool]
log = logging.getLogger(__name__)
REQUEST_TIMEOUT_SECONDS = 10.0
"""How long a connection may take to send its request and read the answer."""


def parse_address(address: str) -> tuple[str, int] | None:
    """``":8080"`` -> ("", 8080), ``"127.0.0.1:0"`` -> ephemeral; ``"0"``/"" -> disabled."""
    if address in ("", "0"):
        return None
    host, _, port = address.rpartition(":")
    return host.strip("[]"), int(port)


def checks_route(checks: Mapping[str, Check]) -> Route:
    def route() -> tuple[int, str, bytes]:
        failing = []
        for name, check in checks.items():
            try:
                ok = check()
            except Exception:
                ok = False
            if not ok:
                failing.append(name)
        if failing:
            return 503, "text/plain", ("not ready: " + ", ".join(failing) + "\n").encode()
        return 200, "text/plain", b"ok\n"

    return route


class HttpEndpoint:
    """A tiny threaded HTTP server answering GET on fixed routes."""

    def __init__(
        self,
        address: tuple[str, int],
        routes: Mapping[str, Route],
        *,
        request_timeout: float = REQUEST_TIMEOUT_SECONDS,
    ) -> None:
        table = dict(routes)

        class Handler(BaseHTTPRequestHandler):
            # A socket timeout on every connection: without it, a client that connects
            # and sends nothing (or trickles bytes) holds a thread for ever, and enough
            # of them exhaust the process.
            timeout = request_timeout

            def do_GET(self) -> None:
                route = table.get(self.path.split("?", 1)[0])
                if route is None:
                    status, content_type, body = 404, "text/plain", b"not found\n"
                else:
                    status, content_type, body = route()
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass  # probes every few seconds would drown the operator's own logs

        self._server = ThreadingHTTPServer(address, Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name=f"http-{address[1]}", daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def close(self) -> None:
        """Release the port of an endpoint that was never started."""
        self._server.server_close()
