"""Benchmark: the whole operator's RSS after N RayJobs have run and gone.

Starts the local control plane (hack/localcluster) with our CRDs and one real Ray head
(hack/rayhead), then runs the operator (``python -m operator_runtime``, all controllers)
of each checkout given, in turn, in a namespace of its own. Through it N RayJobs in
HTTPMode (``python -c pass``, a few at a time) run on the real head; each has
``shutdownAfterJobFinishes: true`` and ``ttlSecondsAfterFinished: 0``, so the operator
deletes its cluster once the job finished, and the benchmark then deletes the RayJob.

Each RayJob's head is its own, as in a cluster: the head container declares a port
that a small TCP forwarder of this process listens on and relays to the real head's
dashboard, and the head Service's name (``<cluster>-head-svc.<ns>.svc.cluster.local``,
what the operator dials) is mapped to 127.0.0.1 in the sandbox's ``/etc/hosts`` while
the cluster exists. When the cluster is deleted, its forwarder closes its listener and
every connection: the head went. So every RayJob is a new URL and a new head, as every
RayCronJob run is.

Reported per checkout: the operator's VmRSS when idle (steady, before the first RayJob),
its peak during the churn, and after all N have run and gone (steady again, after a
settle period); the TCP connections the operator holds to the heads (all forwarders'
ports), at their peak and at the end.

    .venv/bin/python -m hack.sandbox -- .venv/bin/python -m benchmarks.rayjob_churn \
        [--rayjobs 50] [--parallel 5] [--operator-tree PATH ...] [--json PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.machine import machine
from hack import processes, sandbox
from hack.clusterhosts import ClusterHosts
from hack.localcluster import LocalCluster, start_for_tests
from hack.localcluster.cluster import free_port
from hack.rayhead import RayHead, start_ray_head
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.errors import NotFound
from operator_runtime.runtime.kinds import RAY_CLUSTER, RAY_JOB
from operator_runtime.runtime.ratelimit import TokenBucket
from operator_runtime.runtime.transport import UrllibTransport, load_configuration

REPO_ROOT = Path(__file__).resolve().parents[1]
CRD_DIR = REPO_ROOT / "operator_runtime" / "api" / "crds"
MIB = 1024 * 1024
READY_TIMEOUT = 180.0
"""Seconds the operator may take to answer /readyz (its informers synced)."""
RAYJOB_TIMEOUT = 300.0
"""Seconds one RayJob may take from create to its cluster gone (a Ray job that does
nothing takes seconds; the machine is shared)."""
DELETE_TIMEOUT = 120.0
"""Seconds a deleted RayJob may take to go (the operator removes its finalizer)."""
STEADY_WINDOW, STEADY_GROWTH, STEADY_TIMEOUT = 10.0, 0.01, 180.0
"""RSS is steady once it moved by less than 1% over the last 10 s (or after 180 s)."""
SAMPLE_EVERY = 0.25


# -- the heads: one forwarder per RayJob's cluster -----------------------------------------


class Forwarder:
    """Listens on a loopback port and relays every connection to the real head's
    dashboard; ``close()`` is the head going: the listener and every connection close."""

    def __init__(self, target_port: int) -> None:
        self._target = target_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._sockets: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self._target), timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                if self._closed:
                    client.close()
                    upstream.close()
                    return
                self._sockets.update((client, upstream))
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            sockets, self._sockets = list(self._sockets), set()
        with contextlib.suppress(OSError):
            self._listener.close()
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()


# -- the operator process ------------------------------------------------------------------


def rss_bytes(pid: int) -> int:
    match = re.search(r"VmRSS:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text())
    return int(match.group(1)) * 1024 if match else 0


def head_connections(pid: int, ports: set[int]) -> tuple[int, int]:
    """The operator's TCP sockets whose peer is one of ``ports`` on loopback:
    (established, any other state: mostly CLOSE_WAIT, a head that went)."""
    inodes: set[str] = set()
    with contextlib.suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
                if link.startswith("socket:["):
                    inodes.add(link[8:-1])
    established = other = 0
    for table in ("tcp", "tcp6"):
        with contextlib.suppress(OSError):
            lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
            for line in lines:
                fields = line.split()
                remote_port = int(fields[2].rsplit(":", 1)[1], 16)
                if fields[9] in inodes and remote_port in ports:
                    if fields[3] == "01":
                        established += 1
                    else:
                        other += 1
    return established, other


def scrape(port: int, path: str) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:
            status: int = answer.status
            return status
    except OSError:
        return 0


@dataclass
class Operator:
    tree: Path
    process: subprocess.Popen[bytes]
    log: Path
    probe: int

    @classmethod
    def start(cls, tree: Path, cluster: LocalCluster, namespace: str, log: Path) -> Operator:
        probe = free_port()
        with log.open("ab") as output:
            process = subprocess.Popen(
                [sys.executable, "-m", "operator_runtime", f"--kubeconfig={cluster.kubeconfig}",
                 f"--watch-namespace={namespace}", "--enable-leader-election=false",
                 f"--metrics-addr=127.0.0.1:{free_port()}",
                 f"--health-probe-bind-address=127.0.0.1:{probe}", "--log-level=warning"],
                cwd=tree, env={**os.environ, **cluster.env, "PYTHONPATH": str(tree)},
                stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
            )  # fmt: skip
        operator = cls(tree, process, log, probe)
        started = time.monotonic()
        while scrape(probe, "/readyz") != 200:
            if process.poll() is not None or time.monotonic() - started > READY_TIMEOUT:
                operator.stop()
                raise RuntimeError(f"the operator never became ready:\n{operator.tail()}")
            time.sleep(0.2)
        return operator

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> int | None:
        return processes.stop(self.process, grace=60)


@dataclass
class Sampler:
    """VmRSS and the head connections of one process, every SAMPLE_EVERY seconds."""

    pid: int
    ports: set[int]
    samples: list[tuple[float, int, int, int]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_EVERY):
            with contextlib.suppress(OSError):
                established, other = head_connections(self.pid, set(self.ports))
                self.samples.append((time.monotonic(), rss_bytes(self.pid), established, other))

    def since(self, start: float) -> list[tuple[float, int, int, int]]:
        return [sample for sample in list(self.samples) if sample[0] >= start]

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


@dataclass(frozen=True)
class Steady:
    rss: int
    stable: bool
    seconds: float


def steady_rss(sampler: Sampler, minimum: float) -> Steady:
    """Wait at least ``minimum`` seconds, then until RSS moved by less than
    STEADY_GROWTH over STEADY_WINDOW (bounded by STEADY_TIMEOUT)."""
    started = time.monotonic()
    while True:
        time.sleep(1)
        now = time.monotonic()
        window = [rss for at, rss, _, _ in sampler.since(now - STEADY_WINDOW)]
        if not window:
            continue
        stable = max(window) <= min(window) * (1 + STEADY_GROWTH)
        if now - started >= max(minimum, STEADY_WINDOW) and stable:
            return Steady(window[-1], True, now - started)
        if now - started >= max(minimum, STEADY_TIMEOUT):
            return Steady(window[-1], False, now - started)


# -- the RayJobs ---------------------------------------------------------------------------


def rayjob(name: str, namespace: str, dashboard_port: int) -> dict[str, Any]:
    def container(role: str) -> dict[str, Any]:
        return {
            "name": role,
            "image": "rayproject/ray:2.52.0",
            "resources": {
                "requests": {"cpu": "1", "memory": "1Gi"},
                "limits": {"cpu": "1", "memory": "1Gi"},
            },
        }

    head = container("ray-head")
    head["ports"] = [{"name": "dashboard", "containerPort": dashboard_port}]
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "entrypoint": "python -c pass",
            "submissionMode": "HTTPMode",
            "shutdownAfterJobFinishes": True,
            "ttlSecondsAfterFinished": 0,
            "rayClusterSpec": {
                "rayVersion": "2.52.0",
                "headGroupSpec": {"template": {"spec": {"containers": [head]}}},
                "workerGroupSpecs": [
                    {
                        "groupName": "small",
                        "replicas": 0,
                        "minReplicas": 0,
                        "maxReplicas": 1,
                        "template": {"spec": {"containers": [container("ray-worker")]}},
                    }
                ],
            },
        },
    }


def wait_for(what: str, condition: Callable[[], Any], timeout: float) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(OSError):  # a slow API server: ask again
            value = condition()
            if value:
                return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.5)


def gone(read: Callable[[], Any]) -> Callable[[], bool]:
    def check() -> bool:
        try:
            read()
        except NotFound:
            return True
        return False

    return check


@dataclass
class Churn:
    kube: KubeClient
    namespace: str
    head: RayHead
    ports: set[int]
    outcomes: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def run_one(self, index: int) -> None:
        name = f"churn-{index:03}"
        forwarder = Forwarder(self.head.dashboard_port)
        with self._lock:
            self.ports.add(forwarder.port)
        try:
            self.kube.create(rayjob(name, self.namespace, forwarder.port))

            def finished_and_cluster_gone() -> str | None:
                status = self.kube.get(RAY_JOB, name, self.namespace).get("status") or {}
                state = status.get("jobDeploymentStatus")
                cluster = status.get("rayClusterName")
                if state not in ("Complete", "Failed") or not cluster:
                    return None
                cluster_gone = gone(lambda: self.kube.get(RAY_CLUSTER, cluster, self.namespace))
                return state if cluster_gone() else None

            state = wait_for(f"{name} to finish and its cluster to go",
                             finished_and_cluster_gone, RAYJOB_TIMEOUT)  # fmt: skip
        finally:
            forwarder.close()  # the head went
        self.kube.delete(RAY_JOB, name, self.namespace)
        wait_for(f"{name} to go", gone(lambda: self.kube.get(RAY_JOB, name, self.namespace)),
                 DELETE_TIMEOUT)  # fmt: skip
        with self._lock:
            self.outcomes[state] = self.outcomes.get(state, 0) + 1


# -- one checkout's operator ---------------------------------------------------------------


def tree_label(tree: Path) -> str:
    found = subprocess.run(["git", "-C", str(tree), "log", "-1", "--format=%h %s"],
                           capture_output=True, text=True, check=False)  # fmt: skip
    return found.stdout.strip()[:72] or str(tree)


def create_namespace(cluster: LocalCluster, name: str) -> None:
    cluster.kubectl("create", "namespace", name)

    def exists() -> bool:
        return cluster.kubectl("-n", name, "get", "sa", "default", check=False).returncode == 0

    wait_for(f"ServiceAccount {name}/default", exists, 60)


def measure(
    tree: Path, index: int, cluster: LocalCluster, kube: KubeClient, head: RayHead,
    args: argparse.Namespace, logs: Path,
) -> dict[str, Any]:  # fmt: skip
    namespace = f"churn-{index}"
    create_namespace(cluster, namespace)
    operator = Operator.start(tree, cluster, namespace, logs / f"operator-{index}.log")
    ports: set[int] = set()
    sampler = Sampler(operator.process.pid, ports)
    try:
        idle = steady_rss(sampler, 0.0)
        churn = Churn(kube, namespace, head, ports)
        started = time.monotonic()
        with ClusterHosts(kube, namespace), ThreadPoolExecutor(args.parallel) as pool:
            list(pool.map(churn.run_one, range(args.rayjobs)))
        churn_seconds = time.monotonic() - started
        during = sampler.since(started)
        after = steady_rss(sampler, args.settle)
        end = sampler.since(time.monotonic() - 2)[-1]
        if operator.process.poll() is not None:
            raise RuntimeError(f"the operator exited:\n{operator.tail()}")
    finally:
        sampler.stop()
        exit_code = operator.stop()
        cluster.kubectl("delete", "namespace", namespace, "--wait=false", check=False)
    return {
        "tree": str(tree),
        "label": tree_label(tree),
        "idle_rss_bytes": idle.rss,
        "idle_steady": idle.stable,
        "peak_rss_bytes": max(rss for _, rss, _, _ in during),
        "after_rss_bytes": after.rss,
        "after_steady": after.stable,
        "settle_seconds": round(after.seconds, 1),
        "growth_per_rayjob_bytes": round((after.rss - idle.rss) / args.rayjobs),
        "peak_head_connections": max(est + other for _, _, est, other in during),
        "end_head_connections_established": end[2],
        "end_head_connections_other": end[3],
        "churn_seconds": round(churn_seconds, 1),
        "outcomes": churn.outcomes,
        "operator_exit_code": exit_code,
    }


def table(rows: list[dict[str, Any]], rayjobs: int) -> str:
    header = ("operator tree", "idle MiB", "peak MiB", f"after {rayjobs} MiB", "KiB/RayJob",
              "head conns peak", "head conns end", "churn s")  # fmt: skip
    lines = [header]
    for row in rows:
        lines.append((
            row["label"][:48],
            f"{row['idle_rss_bytes'] / MIB:.1f}" + ("" if row["idle_steady"] else "*"),
            f"{row['peak_rss_bytes'] / MIB:.1f}",
            f"{row['after_rss_bytes'] / MIB:.1f}" + ("" if row["after_steady"] else "*"),
            f"{row['growth_per_rayjob_bytes'] / 1024:.0f}",
            str(row["peak_head_connections"]),
            f"{row['end_head_connections_established']}+{row['end_head_connections_other']}",
            f"{row['churn_seconds']:.0f}",
        ))  # fmt: skip
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    out = [" | ".join(cell.ljust(w) if i == 0 else cell.rjust(w)
                      for i, (cell, w) in enumerate(zip(line, widths, strict=True)))
           for line in lines]  # fmt: skip
    out.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(out)


@contextlib.contextmanager
def ray_head() -> Iterator[RayHead]:
    head = start_ray_head()
    try:
        yield head
    finally:
        head.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rayjobs", type=int, default=50)
    parser.add_argument("--parallel", type=int, default=5, help="RayJobs in flight at a time")
    parser.add_argument("--settle", type=float, default=60.0,
                        help="seconds to wait at least after the last RayJob went")  # fmt: skip
    parser.add_argument(
        "--operator-tree", type=Path, action="append", metavar="PATH",
        help="run this checkout's operator (repeatable; default: this one)",
    )  # fmt: skip
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the report here")
    args = parser.parse_args()
    sandbox.exit_unless_inside("the benchmark")
    trees = [tree.resolve() for tree in args.operator_tree or [REPO_ROOT]]
    for tree in trees:
        if not (tree / "operator_runtime" / "__main__.py").is_file():
            parser.error(f"--operator-tree {tree}: no operator_runtime there")
    started = time.monotonic()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="rayjob-churn-") as state:
        logs = Path(state) / "logs"
        logs.mkdir()
        cluster = start_for_tests(Path(state) / "cluster")
        try:
            cluster.kubectl("apply", "--server-side", "-f", str(CRD_DIR))
            cluster.wait_for_crds()
            kube = KubeClient(UrllibTransport(load_configuration(str(cluster.kubeconfig))),
                              limiter=TokenBucket(0, 1))  # fmt: skip
            with ray_head() as head:
                print(f"Ray head up in {head.started_in:.0f} s", file=sys.stderr)
                for index, tree in enumerate(trees):
                    try:
                        row = measure(tree, index, cluster, kube, head, args, logs)
                    except BaseException:
                        for log in sorted(logs.iterdir()):
                            print(f"== {log.name}\n{log.read_text()[-4000:]}", file=sys.stderr)
                        raise
                    print(json.dumps(row), file=sys.stderr)
                    rows.append(row)
        finally:
            cluster.stop()
    print(table(rows, args.rayjobs))
    print(f"{args.rayjobs} RayJobs (HTTPMode, {args.parallel} at a time), each cluster deleted "
          "(ttl 0) and the RayJob deleted; * = RSS still moving at the timeout; head conns: "
          "the operator's TCP connections to the heads (established+other at the end)")  # fmt: skip
    if args.json:
        report = {
            "date": datetime.date.today().isoformat(),
            "machine": machine(),
            "rayjobs": args.rayjobs,
            "parallel": args.parallel,
            "total_seconds": round(time.monotonic() - started, 1),
            "rows": rows,
        }
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
