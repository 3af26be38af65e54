"""Benchmark: operator RSS side by side with KubeRay, idle and with N Ray pods cached.

Starts a local control plane (hack/localcluster) with our CRDs, then runs each operator
in turn against one namespace and reads its steady-state VmRSS, once with no pods and
once with N pods (Ray-like: labels, env, probes, resources) bound to kwok fake nodes:

- ``ours``: ``python -m operator_runtime`` with its default controllers (RayCluster);
- ``ours-pod-cache`` / ``ours-pod-cache-slim``: the same process running only a no-op
  controller (benchmarks/pod_cache_plugin.py) that caches the pods with the default /
  a slim projection, to separate the pod cache from the rest of the controller;
- ``kuberay``: KubeRay's own ray-operator (hack/kuberay), caching the same pods.

    .venv/bin/python -m benchmarks.operator_rss [--pods 10000] [--json PATH]
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.machine import machine
from hack import kuberay, processes, sandbox
from hack.localcluster import LocalCluster, nodes, start_for_tests
from hack.localcluster.cluster import free_port
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.kinds import POD
from operator_runtime.runtime.ratelimit import TokenBucket
from operator_runtime.runtime.transport import UrllibTransport, load_configuration

REPO_ROOT = Path(__file__).resolve().parents[1]
CRD_DIR = REPO_ROOT / "operator_runtime" / "api" / "crds"
NAMESPACE = "rss-bench"
PODS_PER_NODE = 1000
MIB = 1024 * 1024
READY_TIMEOUT = 600.0
"""Seconds an operator may take to become ready (its caches synced)."""
STEADY_WINDOW, STEADY_GROWTH, STEADY_TIMEOUT = 5.0, 0.01, 120.0
"""RSS is steady once it grew by less than 1% over the last 5 s (or after 120 s)."""
SETTLE_TIMEOUT = 900.0
"""Seconds kwok may take to mark every created pod Running."""
KUBERAY_SYNCED = re.compile(r"controllers\.RayCluster\s+Starting workers")
"""KubeRay's /readyz is a ping; its RayCluster controller logs this once its caches
(RayClusters, pods, services, secrets) have synced."""


def pod_manifest(index: int, node: str) -> dict[str, Any]:
    cluster = f"bench-{index // 100}"
    env = [{"name": f"RAY_ENV_{i}", "value": f"value-{i}"} for i in range(12)]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{cluster}-worker-{index:05}",
            "namespace": NAMESPACE,
            "labels": {
                "ray.io/cluster": cluster,
                "ray.io/node-type": "worker",
                "ray.io/group": "workers",
                "app.kubernetes.io/created-by": "kuberay-operator",
            },
            "annotations": {"ray.io/ft-enabled": "false"},
        },
        "spec": {
            "nodeName": node,
            "containers": [
                {
                    "name": "ray-worker",
                    "image": "rayproject/ray:2.46.0",
                    "command": ["/bin/bash", "-lc", "--"],
                    "args": [f"ulimit -n 65536; ray start --address={cluster}-head-svc:6379"],
                    "env": env,
                    "resources": {
                        "limits": {"cpu": "1", "memory": "2Gi"},
                        "requests": {"cpu": "1", "memory": "2Gi"},
                    },
                    "readinessProbe": {
                        "exec": {"command": ["bash", "-c", "wget -T 2 -q -O- localhost:52365"]},
                        "periodSeconds": 5,
                    },
                    "ports": [{"containerPort": 8080, "name": "metrics"}],
                }
            ],
        },
    }


# -- probing a process ---------------------------------------------------------------------


def rss_bytes(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    match = re.search(r"VmRSS:\s+(\d+) kB", status)
    assert match, status
    return int(match.group(1)) * 1024


def scrape(port: int, path: str) -> tuple[int, str]:
    try:
        url = f"http://127.0.0.1:{port}{path}"
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except OSError:
        return 0, ""


@dataclass(frozen=True)
class Steady:
    rss: int
    peak: int
    stable: bool
    seconds: float


def steady_rss(pid: int) -> Steady:
    """Poll VmRSS until it grew by less than STEADY_GROWTH over STEADY_WINDOW seconds."""
    started = time.monotonic()
    samples: list[tuple[float, int]] = []
    while True:
        now, rss = time.monotonic(), rss_bytes(pid)
        samples.append((now, rss))
        window = [value for at, value in samples if at >= now - STEADY_WINDOW]
        peak = max(value for _, value in samples)
        if now - started >= STEADY_WINDOW and max(window) <= window[0] * (1 + STEADY_GROWTH):
            return Steady(rss, peak, True, now - started)
        if now - started >= STEADY_TIMEOUT:
            return Steady(rss, peak, False, now - started)
        time.sleep(0.25)


# -- the processes compared ----------------------------------------------------------------


@dataclass(frozen=True)
class Subject:
    key: str
    label: str
    plugin: str | None = None
    """``None``: the default registry; else MODULE:FUNCTION registering ``pod-cache``."""
    kuberay: bool = False

    def start(self, cluster: LocalCluster, log: Path, metrics: int, probe: int) -> Running:
        if self.kuberay:
            process = kuberay.start_operator(
                kubeconfig=cluster.kubeconfig, watch_namespace=NAMESPACE, log_path=log,
                metrics_port=metrics, probe_port=probe,
            )  # fmt: skip
            return Running(self, process, log, metrics, probe)
        plugin = [f"--controller-plugin={self.plugin}", "--controllers=pod-cache"]
        with log.open("ab") as output:
            process = subprocess.Popen(
                [sys.executable, "-m", "operator_runtime", f"--kubeconfig={cluster.kubeconfig}",
                 f"--watch-namespace={NAMESPACE}", "--enable-leader-election=false",
                 f"--metrics-addr=127.0.0.1:{metrics}",
                 f"--health-probe-bind-address=127.0.0.1:{probe}", "--log-level=warning",
                 *(plugin if self.plugin else [])],
                cwd=REPO_ROOT, env={**cluster.env, "PYTHONPATH": str(REPO_ROOT)},
                stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
            )  # fmt: skip
        return Running(self, process, log, metrics, probe)


@dataclass(frozen=True)
class Running:
    subject: Subject
    process: subprocess.Popen[bytes]
    log: Path
    metrics: int
    probe: int

    def ready(self) -> bool:
        if scrape(self.probe, "/readyz")[0] != 200:
            return False
        return not self.subject.kuberay or bool(KUBERAY_SYNCED.search(self.log.read_text()))

    def cached_pods(self) -> int | None:
        """What our informers report caching (KubeRay exports no such metric)."""
        if self.subject.kuberay:
            return None
        text = scrape(self.metrics, "/metrics")[1]
        found = re.findall(r'^informer_cached_objects\{kind="Pod"\} (\S+)$', text, re.M)
        return sum(int(float(value)) for value in found)

    def stop(self) -> None:
        processes.stop(self.process, grace=30)


SUBJECTS: tuple[Subject, ...] = (
    Subject("ours", "ours: RayCluster controller"),
    Subject("ours-pod-cache", "ours: pod-cache only", "benchmarks.pod_cache_plugin:register"),
    Subject(
        "ours-pod-cache-slim", "ours: pod-cache, slim", "benchmarks.pod_cache_plugin:register_slim"
    ),
    Subject("kuberay", f"KubeRay {kuberay.VERSION}", kuberay=True),
)


def measure(subject: Subject, cluster: LocalCluster, logs: Path, pods: int) -> dict[str, Any]:
    log = logs / f"{subject.key}-{pods}.log"
    running = subject.start(cluster, log, free_port(), free_port())
    try:
        started = time.monotonic()
        while not running.ready():
            if running.process.poll() is not None or time.monotonic() - started > READY_TIMEOUT:
                tail = log.read_text()[-3000:]
                raise RuntimeError(f"{subject.key} never became ready; log tail:\n{tail}")
            time.sleep(0.2)
        ready = time.monotonic() - started
        steady = steady_rss(running.process.pid)
        return {
            "rss_bytes": steady.rss,
            "peak_rss_bytes": steady.peak,
            "steady": steady.stable,
            "ready_seconds": round(ready, 1),
            "steady_seconds": round(steady.seconds, 1),
            "cached_pods": running.cached_pods(),
        }
    finally:
        running.stop()


# -- the cluster and its pods --------------------------------------------------------------


def prepare(cluster: LocalCluster, pods: int) -> int:
    """CRDs (both operators watch RayClusters), fake nodes, the namespace; node count."""
    cluster.kubectl("apply", "--server-side", "-f", str(CRD_DIR))
    cluster.wait_for_crds()
    node_count = max(1, -(-pods // PODS_PER_NODE))
    nodes.create(cluster, count=node_count, gpu_nodes=0, prefix="bench-node")
    cluster.kubectl("create", "namespace", NAMESPACE)
    while cluster.kubectl("-n", NAMESPACE, "get", "sa", "default", check=False).returncode:
        time.sleep(0.2)
    return node_count


def create_pods(client: KubeClient, pods: int, node_count: int) -> dict[str, float]:
    """Create the pods, then wait (bounded) until kwok has marked every one Running."""
    started = time.monotonic()

    def create(index: int) -> None:
        client.create(pod_manifest(index, f"bench-node-{index % node_count}"))

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(create, range(pods)))
    created = time.monotonic() - started
    pending = -1
    while time.monotonic() - started < SETTLE_TIMEOUT:
        page = client.list(POD, NAMESPACE, field_selector="status.phase!=Running", limit=1)
        pending = len(page["items"]) + int(page["metadata"].get("remainingItemCount") or 0)
        if pending == 0:
            break
        time.sleep(2)
    return {
        "create_seconds": round(created, 1),
        "settle_seconds": round(time.monotonic() - started - created, 1),
        "pods_not_running": pending,
    }


# -- report --------------------------------------------------------------------------------


def ratio(ours: float, theirs: float) -> float | None:
    return round(ours / theirs, 2) if theirs else None


def summarize(subjects: Sequence[Subject], results: dict[str, Any], pods: int) -> list[Any]:
    rows: list[dict[str, Any]] = []
    for subject in subjects:
        idle, full = results[subject.key]["idle"], results[subject.key]["full"]
        per_pod = (full["rss_bytes"] - idle["rss_bytes"]) / pods if pods else 0.0
        rows.append({"key": subject.key, "process": subject.label, "idle": idle, "full": full,
                     "per_pod_bytes": round(per_pod)})  # fmt: skip
    base = next((row for row in rows if row["key"] == "kuberay"), None)
    for row in rows:
        row["ratio_rss_vs_kuberay"] = (
            ratio(row["full"]["rss_bytes"], base["full"]["rss_bytes"]) if base else None
        )
        row["ratio_per_pod_vs_kuberay"] = (
            ratio(row["per_pod_bytes"], base["per_pod_bytes"]) if base else None
        )
    return rows


def table(rows: Sequence[dict[str, Any]], pods: int) -> str:
    header = ("process", "idle MiB", f"{pods:,} pods MiB", "bytes/pod", "RSS ratio",
              "per-pod ratio", "ready s")  # fmt: skip
    lines = [header]
    for row in rows:
        lines.append((
            row["process"],
            f"{row['idle']['rss_bytes'] / MIB:.1f}",
            f"{row['full']['rss_bytes'] / MIB:.1f}" + ("" if row["full"]["steady"] else "*"),
            f"{row['per_pod_bytes']:,}",
            "-" if row["ratio_rss_vs_kuberay"] is None else f"{row['ratio_rss_vs_kuberay']:.2f}",
            "-" if row["ratio_per_pod_vs_kuberay"] is None
            else f"{row['ratio_per_pod_vs_kuberay']:.2f}",
            f"{row['full']['ready_seconds']:.1f}",
        ))  # fmt: skip
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    out = [
        " | ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(
            zip(line, widths, strict=True)))
        for line in lines
    ]  # fmt: skip
    out.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the report here")
    parser.add_argument(
        "--only", default="", metavar="KEY,...",
        help=f"measure only these processes (of {', '.join(s.key for s in SUBJECTS)})",
    )  # fmt: skip
    args = parser.parse_args()
    sandbox.exit_unless_inside("the benchmark")
    wanted = {key.strip() for key in args.only.split(",") if key.strip()}
    subjects = [s for s in SUBJECTS if not wanted or s.key in wanted]
    if wanted - {s.key for s in subjects}:
        parser.error(f"--only: unknown {sorted(wanted - {s.key for s in subjects})}")
    if any(s.kuberay for s in subjects):
        kuberay.ensure_built()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="operator-rss-") as state:
        logs = Path(state) / "operator-logs"
        logs.mkdir()
        cluster = start_for_tests(Path(state) / "cluster")
        try:
            node_count = prepare(cluster, args.pods)
            results: dict[str, Any] = {}
            for subject in subjects:
                results[subject.key] = {"idle": measure(subject, cluster, logs, 0)}
                print(f"{subject.key}: idle {results[subject.key]['idle']}", file=sys.stderr)
            client = KubeClient(
                UrllibTransport(load_configuration(str(cluster.kubeconfig))),
                limiter=TokenBucket(0, 1),
            )
            pods = create_pods(client, args.pods, node_count)
            print(f"pods: {pods}", file=sys.stderr)
            for subject in subjects:
                results[subject.key]["full"] = measure(subject, cluster, logs, args.pods)
                print(f"{subject.key}: {results[subject.key]['full']}", file=sys.stderr)
            sample = client.get(POD, pod_manifest(0, "")["metadata"]["name"], NAMESPACE)
        finally:
            cluster.stop()
    rows = summarize(subjects, results, args.pods)
    report = {
        "date": datetime.date.today().isoformat(),
        "machine": machine(),
        "pods": args.pods,
        "pod_json_bytes": len(json.dumps(sample)),
        **pods,
        "total_seconds": round(time.monotonic() - started, 1),
        "rows": rows,
    }
    print(table(rows, args.pods))
    print("ratios: ours / KubeRay at N pods; * = RSS still growing at the timeout")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
