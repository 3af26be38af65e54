"""Benchmark: what the dashboard pool holds after N heads were polled and went.

Each head stands for one RayJob's cluster (a RayCronJob's every run is a new cluster,
and every head pod a new IP): a loopback HTTP server that answers the job info call.
The process polls each head a few times, as the RayJob controller does while the job
runs, then every head goes; it reports its RSS (VmRSS) before, after the polls and
after the heads went, and the sockets it still holds.

    .venv/bin/python -m benchmarks.dashboard_pool [--heads 50] [--polls 3]

Run it from another checkout's root to measure that checkout's client (``PYTHONPATH``).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from operator_runtime.clients import DashboardPool, direct_endpoint

MIB = 1024 * 1024
_OPEN: set[socket.socket] = set()
"""The heads' side of their connections: a head that goes closes them."""
JOB = json.dumps({"status": "RUNNING", "entrypoint": "python run.py", "job_id": "x"}).encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        _OPEN.add(self.connection)
        self.send_response(200)
        self.send_header("content-length", str(len(JOB)))
        self.end_headers()
        self.wfile.write(JOB)

    def log_message(self, *args: object) -> None:
        pass


def _rss() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024 / MIB
    return 0.0


def _sockets() -> int:
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            count += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
    return count


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--heads", type=int, default=50)
    parser.add_argument("--polls", type=int, default=3)
    args = parser.parse_args()
    pool = DashboardPool()
    # warm up: the first client loads httpx, certifi's CA bundle, the models
    warm = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=warm.serve_forever, daemon=True).start()
    pool.dashboard(direct_endpoint(f"127.0.0.1:{warm.server_address[1]}")).job_info("x")
    warm.shutdown()
    warm.server_close()
    gc.collect()
    before, sockets_before = _rss(), _sockets()
    for _ in range(args.heads):
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        endpoint = direct_endpoint(f"127.0.0.1:{server.server_address[1]}")
        for _ in range(args.polls):
            pool.dashboard(endpoint).job_info("x")
        server.shutdown()
        server.server_close()
        for connection in list(_OPEN):
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
            _OPEN.discard(connection)
    # one more poll of a live head: the pool drops connections whose peer went
    live = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=live.serve_forever, daemon=True).start()
    pool.dashboard(direct_endpoint(f"127.0.0.1:{live.server_address[1]}")).job_info("x")
    gc.collect()
    after = _rss()
    print(
        json.dumps(
            {
                "heads": args.heads,
                "rss_before_mib": round(before, 1),
                "rss_after_mib": round(after, 1),
                "grew_mib": round(after - before, 1),
                "per_head_kib": round((after - before) * 1024 / args.heads, 1),
                "sockets_left": _sockets() - sockets_before,
            }
        )
    )
    pool.close()


if __name__ == "__main__":
    main()
