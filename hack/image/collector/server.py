"""A stand-in for KubeRay's history-server collector, run by the image
``hack.image.collector`` builds: what the operator's sidecar contract asks of a
collector, and nothing of the real one (no storage upload).

It listens on ``$EVENTS_PORT`` for the batches Ray's dashboard agent posts to
``/v1/events`` (a JSON list of events), counts them by ``eventType`` and prints each
batch's types to stdout (its log). ``GET /status`` answers what it has seen: the event
counts, the files under the shared ``/tmp/ray`` (Ray's logs, from the emptyDir the
operator mounts in both containers) and the collector's own env, so a test reads the
sidecar's view with one request from inside the pod.

Python's standard library only: the image is Debian's python3.11 and this file.
"""

from __future__ import annotations

import collections
import http.server
import json
import os
import signal
import sys
import threading
from pathlib import Path

RAY_DIR = Path("/tmp/ray")
REPORTED_ENV = (
    "POD_IP", "RAY_CLUSTER_NAME", "RAY_CLUSTER_NAMESPACE", "RAY_ROLE", "EVENTS_PORT",
    "FQ_RAY_IP", "OWNER_KIND", "OWNER_NAME", "RAY_DASHBOARD_ADDRESS", "STORAGE_BACKEND",
)  # fmt: skip
MAX_LISTED_FILES = 2000


class Seen:
    """What the collector received, shared by the server's threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.by_type: collections.Counter[str] = collections.Counter()
        self.posts = 0

    def add(self, events: list[object]) -> list[str]:
        types = [str(e.get("eventType", "?")) if isinstance(e, dict) else "?" for e in events]
        with self.lock:
            self.posts += 1
            self.by_type.update(types)
        return types

    def status(self) -> dict[str, object]:
        files = sorted(
            str(path.relative_to(RAY_DIR))
            for path in RAY_DIR.rglob("*")
            if path.is_file() and not path.is_symlink()
        )
        with self.lock:
            return {
                "posts": self.posts,
                "events": dict(self.by_type),
                "files": files[:MAX_LISTED_FILES],
                "env": {name: os.environ.get(name) for name in REPORTED_ENV},
            }


SEEN = Seen()


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        if self.path != "/v1/events":
            self._answer(404, {"error": f"no {self.path}"})
            return
        try:
            events = json.loads(body or b"[]")
        except ValueError as error:
            self._answer(400, {"error": str(error)})
            return
        batch = events if isinstance(events, list) else [events]
        types = SEEN.add(batch)
        print(f"events {len(batch)}: {','.join(sorted(set(types)))}", flush=True)
        self._answer(200, {})

    def do_GET(self) -> None:
        if self.path != "/status":
            self._answer(404, {"error": f"no {self.path}"})
            return
        self._answer(200, SEEN.status())

    def _answer(self, code: int, payload: object) -> None:
        body = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Each batch is printed once, by ``do_POST``; no access log beside it."""


def main() -> None:
    port = int(os.environ.get("EVENTS_PORT") or "8084")
    server = http.server.ThreadingHTTPServer(("", port), Handler)
    role = os.environ.get("RAY_ROLE")
    print(f"stand-in collector ({role}) listening on {port}", flush=True)
    # The container's PID 1, for which the kernel drops a signal it has no handler
    # for: without this, deleting the pod waited out its whole grace period.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    server.serve_forever()


if __name__ == "__main__":
    main()
