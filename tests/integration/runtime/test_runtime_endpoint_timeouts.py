"""The probe and metrics endpoints drop connections that send nothing: a client that
connects and waits must not hold a server thread for ever."""

from __future__ import annotations

import socket
import time

from operator_runtime.runtime.health import HttpEndpoint


def _ok() -> tuple[int, str, bytes]:
    return 200, "text/plain", b"ok\n"


def test_an_idle_connection_is_closed_after_the_timeout_and_probes_still_answer() -> None:
    endpoint = HttpEndpoint(("127.0.0.1", 0), {"/healthz": _ok}, request_timeout=0.5)
    endpoint.start()
    try:
        idle = [socket.create_connection(("127.0.0.1", endpoint.port)) for _ in range(20)]
        started = time.monotonic()
        for sock in idle:
            sock.settimeout(5)
            # Old code: no socket timeout, so recv blocked until our own 5 s ran out.
            assert sock.recv(1024) == b"", "the server answered a request never sent"
        closed_after = time.monotonic() - started
        assert closed_after < 2, closed_after
        with socket.create_connection(("127.0.0.1", endpoint.port), timeout=5) as probe:
            probe.sendall(b"GET /healthz HTTP/1.0\r\n\r\n")
            assert probe.recv(1024).startswith(b"HTTP/1.0 200")
        for sock in idle:
            sock.close()
    finally:
        endpoint.stop()
