"""Benchmark: N RayClusters x M workers, our operator side by side with KubeRay's.

Each subject runs on a fresh local control plane (hack/localcluster) with the same fake
nodes; the operators get the same ``--qps``, ``--burst`` and ``--reconcile-concurrency``:

- ``ours``: ``python -m operator_runtime --controllers raycluster``, no leader election;
- ``kuberay``: KubeRay's ray-operator (hack/kuberay), same flags;
- ``ceiling``: no operator; a plain client with the same qps/burst creates the same
  number of pods (rendered as our operator renders a worker), 32 requests at a time:
  what the API server and kwok manage on this machine.

For each operator, first fairness: a 1-worker cluster's time to ``ready`` on the idle
operator, while a plain client creates 500 pods (the control plane's own share), and
while another cluster scales 0 -> 500 (each the median of 3, timed from watches); those
clusters are deleted before the scale-up. Then the time until every RayCluster's
``status.state`` is ``ready`` (and until kwok has every pod Running), pods created per
second, the API requests the API server counted (``apiserver_request_total``, all
clients, minus the benchmark's own polling), the operator's own request count, CPU
seconds and peak RSS of its process tree, and the time to delete every RayCluster until
no pod is left (with the requests and reconciles of that window). Below the table, our
operator's passes by what queued them (``operator_reconcile_triggers_total``).

    .venv/bin/python -m benchmarks.scale [--clusters 100 --workers 100] [--qps 100 --burst 200]
        [--concurrency 1] [--fairness-workers 500] [--only ours,kuberay,ceiling] [--json PATH]
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from benchmarks.machine import machine
from hack import kuberay, processes, sandbox
from hack.localcluster import LocalCluster, ensure_built
from hack.localcluster.cluster import free_port
from hack.localcluster.nodes import PODS_PER_NODE
from operator_runtime.api.labels import NodeType
from operator_runtime.api.raycluster import RayCluster
from operator_runtime.render import PodParams, build_pod
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.errors import NotFound
from operator_runtime.runtime.kinds import POD, RAY_CLUSTER, ResourceKind
from operator_runtime.runtime.ratelimit import BucketPerKind, TokenBucket
from operator_runtime.runtime.transport import UrllibTransport, load_configuration

REPO_ROOT = Path(__file__).resolve().parents[1]
CRD_DIR = REPO_ROOT / "operator_runtime" / "api" / "crds"
NAMESPACE = "scale-bench"
IMAGE = "rayproject/ray:2.46.0"
MIB = 1024 * 1024
OPERATOR_READY_TIMEOUT = 120.0
CEILING_CLIENTS = 32
KUBERAY_SYNCED = re.compile(r"controllers\.RayCluster\s+Starting workers")
"""KubeRay's /readyz is a ping; its RayCluster controller logs this once its caches
have synced."""
CLIENT_VERBS = {"get": "GET", "list": "LIST", "create": "POST", "update": "PUT", "patch": "PATCH",
                "apply": "APPLY", "delete": "DELETE", "watch": "WATCH"}  # fmt: skip
"""Our client's verb names -> the API server's ``verb`` label."""
SHOWN_VERBS = ("POST", "PUT", "PATCH", "DELETE", "GET", "LIST", "WATCH")


@dataclass(frozen=True)
class Settings:
    clusters: int
    workers: int
    qps: float
    burst: int
    concurrency: int
    fairness_workers: int
    timeout: float
    profile: Path | None = None
    """Where py-spy writes our operator's sampled stacks (collapsed, one per line)."""
    fairness_runs: int = 3
    """Each fairness figure is the median of this many runs (one is at the mercy of noise
    on a shared 2-core machine); the test's smoke run takes 1."""

    @property
    def pods(self) -> int:
        return self.clusters * (self.workers + 1)

    @property
    def node_count(self) -> int:
        """Enough 1,000-pod kwok nodes for the main run (the fairness run comes after it
        is deleted), plus one spare."""
        biggest = max(self.pods, self.fairness_workers + 3)
        return -(-biggest // int(PODS_PER_NODE)) + 1


# -- the control plane ---------------------------------------------------------------------


class BenchCluster(LocalCluster):
    """The local control plane with kube-controller-manager's client unthrottled: its
    default 20 requests/s would make the garbage collector, which deletes a RayCluster's
    pods, the bottleneck of every delete."""

    def _arguments(self, component: str) -> list[str]:
        arguments = super()._arguments(component)
        if component == "kube-controller-manager":
            arguments += ["--kube-api-qps=2000", "--kube-api-burst=4000"]
        return arguments


@contextmanager
def control_plane(state: Path, settings: Settings) -> Iterator[LocalCluster]:
    cluster = BenchCluster(state_dir=state, tools=ensure_built(), die_with_parent=True)
    cluster.start(node_count=settings.node_count, crds=CRD_DIR)
    try:
        cluster.kubectl("create", "namespace", NAMESPACE)
        while cluster.kubectl("-n", NAMESPACE, "get", "sa", "default", check=False).returncode:
            time.sleep(0.2)
        yield cluster
    finally:
        cluster.stop()


def node_of(index: int, settings: Settings) -> str:
    """Cluster ``index``'s pods all go to one kwok node (``nodeName`` in the templates,
    so the scheduler is out of the measurement), at most 1,000 pods a node."""
    per_node = max(1, int(PODS_PER_NODE) // (settings.workers + 1))
    return f"kwok-node-{min(index // per_node, settings.node_count - 1)}"


def raycluster(name: str, workers: int, node: str, *, max_workers: int | None = None) -> Any:
    def template(container: str) -> dict[str, Any]:
        resources = {"cpu": "100m", "memory": "256Mi"}
        return {"spec": {
            "nodeName": node,
            "containers": [{"name": container, "image": IMAGE,
                            "resources": {"requests": resources, "limits": resources}}],
        }}  # fmt: skip

    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "rayVersion": "2.46.0",
            "headGroupSpec": {"rayStartParams": {}, "template": template("ray-head")},
            "workerGroupSpecs": [{
                "groupName": "workers", "replicas": workers, "minReplicas": 0,
                "maxReplicas": max(workers, max_workers or 0), "rayStartParams": {},
                "template": template("ray-worker"),
            }],
        },
    }  # fmt: skip


def worker_pod(node: str) -> dict[str, Any]:
    """A worker pod as our operator renders it for ``raycluster`` (no owner: the garbage
    collector would delete a pod whose owner does not exist)."""
    manifest = raycluster("ceiling", 1, node)
    manifest["metadata"]["uid"] = "00000000-0000-0000-0000-000000000000"
    cluster = RayCluster.model_validate(manifest)
    params = PodParams(cluster=cluster, node_type=NodeType.WORKER, group_name="workers")
    pod: dict[str, Any] = json.loads(json.dumps(build_pod(params=params)))
    del pod["metadata"]["ownerReferences"]
    return pod


# -- measuring processes and the API server ------------------------------------------------


def process_tree(root: int) -> list[int]:
    """``root`` and every live process below it."""
    return [root, *(pid for (pid, _), _, _ in processes.descendants(root))]


def cpu_seconds(pids: Sequence[int]) -> float:
    """The user and system CPU seconds of those of ``pids`` still running."""
    return sum(
        processes.cpu_seconds(fields)
        for fields in map(processes.read_stat, pids)
        if fields is not None
    )


def status_kib(pid: int, field_name: str) -> int:
    try:
        match = re.search(rf"{field_name}:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text())
    except OSError:
        return 0
    return int(match.group(1)) if match else 0


class Sampler:
    """Samples the operator's process tree every 0.25 s: peak RSS (the sum over the
    tree, since the last ``peak_rss = 0``) and CPU seconds."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.peak_rss = 0
        self._pids = [root]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        ticks = 0
        while not self._stop.wait(0.25):
            if ticks % 20 == 0:
                self._pids = process_tree(self.root)
            ticks += 1
            rss = sum(status_kib(pid, "VmRSS") for pid in self._pids) * 1024
            self.peak_rss = max(self.peak_rss, rss)

    def cpu(self) -> float:
        return cpu_seconds(process_tree(self.root))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def apiserver_requests(cluster: LocalCluster) -> Counter[str]:
    """``apiserver_request_total`` summed by verb, from the API server's /metrics."""
    tls = ssl.create_default_context(cafile=str(cluster.pki.ca_cert))
    tls.load_cert_chain(str(cluster.pki.admin_cert), str(cluster.pki.admin_key))
    with urllib.request.urlopen(f"{cluster.server}/metrics", timeout=30, context=tls) as answer:
        text = answer.read().decode()
    totals: Counter[str] = Counter()
    for line in text.splitlines():
        if line.startswith("apiserver_request_total{"):
            labels, value = line.rsplit(" ", 1)
            verb = re.search(r'verb="([^"]*)"', labels)
            if verb:
                totals[verb.group(1)] += int(float(value))
    return totals


def operator_counter(port: int, name: str) -> int | None:
    """The sum of one counter the operator exports (both operators export the
    controller-runtime names ``rest_client_requests_total`` and
    ``controller_runtime_reconcile_total``)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
            text = answer.read().decode()
    except OSError:
        return None
    found = re.findall(rf"^{name}\{{[^}}]*\}} (\S+)$", text, re.M)
    return sum(int(float(value)) for value in found) if found else None


def operator_counters_by(port: int, name: str, label: str) -> dict[str, int]:
    """One counter the operator exports, summed by the value of ``label`` (empty when
    the operator does not export it: KubeRay has no ``operator_reconcile_triggers_total``)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
            text = answer.read().decode()
    except OSError:
        return {}
    totals: Counter[str] = Counter()
    for labels, value in re.findall(rf"^{name}\{{([^}}]*)\}} (\S+)$", text, re.M):
        found = re.search(rf'{label}="([^"]*)"', labels)
        if found:
            totals[found.group(1)] += int(float(value))
    return dict(totals)


TRIGGERS: Final = "operator_reconcile_triggers_total"
"""Our operator's passes by what queued them (``Pod/MODIFIED``, ``requeue_after``...)."""


def _grown(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    grown = {key: value - before.get(key, 0) for key, value in after.items()}
    return dict(sorted(((k, v) for k, v in grown.items() if v), key=lambda kv: -kv[1]))


OWN_COUNTERS: Final = {
    "operator_requests": "rest_client_requests_total",
    "operator_reconciles": "controller_runtime_reconcile_total",
}
"""Report key -> the operator's counter whose growth over the scale-up it reports."""


class Bench:
    """The benchmark's own client; counts its requests by the API server's verb names."""

    def __init__(self, cluster: LocalCluster, settings: Settings) -> None:
        self.cluster = cluster
        self.own: Counter[str] = Counter()
        self._lock = threading.Lock()
        transport = UrllibTransport(load_configuration(str(cluster.kubeconfig)), pool_size=64)
        self.client = KubeClient(transport, limiter=TokenBucket(0, 1), observe=self._count)
        # The ceiling's own client: its requests are the measurement, not overhead. Its
        # qps and burst hold per kind, as both operators' do.
        self.limited = KubeClient(
            transport, limiter=BucketPerKind(TokenBucket(settings.qps, settings.burst))
        )

    def _count(self, verb: str, _code: str, _seconds: float) -> None:
        with self._lock:
            self.own[CLIENT_VERBS.get(verb, verb.upper())] += 1

    def snapshot(self) -> tuple[Counter[str], Counter[str]]:
        with self._lock:
            own = Counter(self.own)
        return apiserver_requests(self.cluster), own

    def requests_since(self, before: tuple[Counter[str], Counter[str]]) -> dict[str, int]:
        server, own = self.snapshot()
        delta = (server - before[0]) - (own - before[1])
        return {verb: delta[verb] for verb in sorted(delta)}

    def pod_count(self) -> int:
        page = self.client.list(POD, NAMESPACE, limit=1)
        return len(page["items"]) + int(page["metadata"].get("remainingItemCount") or 0)

    def pods_not_running(self) -> bool:
        page = self.client.list(POD, NAMESPACE, field_selector="status.phase!=Running", limit=1)
        return bool(page["items"])

    def ready_clusters(self) -> set[str]:
        items = self.client.list(RAY_CLUSTER, NAMESPACE)["items"]
        return {
            item["metadata"]["name"]
            for item in items
            if (item.get("status") or {}).get("state") == "ready"
        }

    def ready_workers(self, name: str) -> int:
        item = self.client.get(RAY_CLUSTER, name, NAMESPACE)
        return int((item.get("status") or {}).get("readyWorkerReplicas") or 0)

    def cluster_ready(self, name: str) -> bool:
        try:
            item = self.client.get(RAY_CLUSTER, name, NAMESPACE)
        except NotFound:
            return False
        return (item.get("status") or {}).get("state") == "ready"


# -- progress and waiting ------------------------------------------------------------------


class Progress:
    """One line on stderr, rewritten in place on a terminal, every 5 s otherwise."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.tty = sys.stderr.isatty()
        self._last = 0.0

    def show(self, text: str, *, final: bool = False) -> None:
        now = time.monotonic()
        if not final and now - self._last < (0.5 if self.tty else 5.0):
            return
        self._last = now
        line = f"[{self.label}] {text}"
        if self.tty:
            print(f"\r\033[K{line}", end="\n" if final else "", file=sys.stderr, flush=True)
        else:
            print(line, file=sys.stderr, flush=True)


def wait_until(what: str, done: Callable[[], bool], timeout: float, interval: float = 0.5) -> float:
    started = time.monotonic()
    while not done():
        if time.monotonic() - started > timeout:
            raise TimeoutError(f"{what}: not done after {timeout:.0f}s")
        time.sleep(interval)
    return time.monotonic() - started


# -- operators -----------------------------------------------------------------------------


@dataclass
class Operator:
    key: str
    process: subprocess.Popen[bytes]
    log: Path
    metrics_port: int
    probe_port: int

    def ready(self) -> bool:
        if self.process.poll() is not None:
            tail = self.log.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"{self.key} exited with {self.process.returncode}:\n{tail}")
        try:
            url = f"http://127.0.0.1:{self.probe_port}/readyz"
            with urllib.request.urlopen(url, timeout=5) as answer:
                if answer.status != 200:
                    return False
        except OSError:
            return False
        return self.key != "kuberay" or bool(KUBERAY_SYNCED.search(self.log.read_text()))

    def stop(self) -> None:
        processes.stop(self.process, grace=30)


def start_operator(
    key: str,
    cluster: LocalCluster,
    settings: Settings,
    logs: Path,
    *,
    controllers: Sequence[str] | None = ("raycluster",),
) -> Operator:
    """Start one operator and wait until it is ready. ``controllers`` restricts ours to
    those controllers (``None``: all, as users run it; a RayJob or RayService needs the
    RayCluster controller too); KubeRay always runs its default set."""
    metrics, probe, log = free_port(), free_port(), logs / f"{key}.log"
    common = [
        f"--kubeconfig={cluster.kubeconfig}", f"--watch-namespace={NAMESPACE}",
        "--enable-leader-election=false", f"--metrics-addr=127.0.0.1:{metrics}",
        f"--health-probe-bind-address=127.0.0.1:{probe}", f"--qps={settings.qps:g}",
        f"--burst={settings.burst}", f"--reconcile-concurrency={settings.concurrency}",
        "--log-stdout-encoder=console",
    ]  # fmt: skip
    if key == "kuberay":
        command = [str(kuberay.ensure_built().path("ray-operator")), *common]
    else:
        only = [f"--controllers={','.join(controllers)}"] if controllers else []
        command = [sys.executable, "-m", "operator_runtime", *only, *common]
    with log.open("ab") as output:
        process = subprocess.Popen(
            command, cwd=REPO_ROOT, stdin=subprocess.DEVNULL, stdout=output,
            stderr=subprocess.STDOUT,
            env={**cluster.env, "PYTHONPATH": str(REPO_ROOT)},
        )  # fmt: skip
    operator = Operator(key, process, log, metrics, probe)
    try:
        wait_until(f"{key} ready", operator.ready, OPERATOR_READY_TIMEOUT, 0.2)
    except BaseException:
        operator.stop()
        raise
    return operator


def start_profiler(pid: int, output: Path) -> subprocess.Popen[bytes]:
    """py-spy (a test extra) sampling ``pid``'s threads, idle frames included, until
    ``stop_profiler``; its collapsed stacks go to ``output``."""
    py_spy = Path(sys.executable).with_name("py-spy")
    return subprocess.Popen(
        [str(py_spy), "record", "--pid", str(pid), "--format=raw", "--rate=50", "--threads",
         "--idle", f"--output={output}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


def stop_profiler(profiler: subprocess.Popen[bytes]) -> None:
    """SIGINT makes py-spy write what it sampled."""
    profiler.send_signal(signal.SIGINT)
    profiler.wait(60)


# -- phases --------------------------------------------------------------------------------


@dataclass
class Result:
    key: str
    label: str
    values: dict[str, Any] = field(default_factory=dict)


def scale_up_and_delete(
    bench: Bench, operator: Operator, sampler: Sampler, settings: Settings
) -> dict[str, Any]:
    """Create N clusters of M workers; wait until all are ready; delete them all."""
    progress = Progress(operator.key)
    names = [f"bench-{index:03}" for index in range(settings.clusters)]
    before, cpu_before = bench.snapshot(), sampler.cpu()
    own_before = {key: operator_counter(operator.metrics_port, name)
                  for key, name in OWN_COUNTERS.items()}  # fmt: skip
    triggers_before = operator_counters_by(operator.metrics_port, TRIGGERS, "source")
    sampler.peak_rss = 0
    started = time.monotonic()
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(
            lambda i: bench.client.create(raycluster(names[i], settings.workers,
                                                     node_of(i, settings))),
            range(settings.clusters),
        ))  # fmt: skip
    all_created: float | None = None
    all_running: float | None = None
    while True:
        elapsed = time.monotonic() - started
        pods, ready = bench.pod_count(), len(bench.ready_clusters())
        if all_created is None and pods >= settings.pods:
            all_created = elapsed
        if all_created is not None and all_running is None and not bench.pods_not_running():
            all_running = elapsed
        progress.show(f"{elapsed:6.1f}s  pods {pods:,}/{settings.pods:,}  "
                      f"ready {ready}/{settings.clusters}")  # fmt: skip
        if ready == settings.clusters:
            break
        if elapsed > settings.timeout:
            raise TimeoutError(f"{operator.key}: {ready}/{settings.clusters} ready, {pods} pods")
        time.sleep(0.5)
    to_ready = time.monotonic() - started
    progress.show(f"all {settings.clusters} ready in {to_ready:.1f}s", final=True)
    up_requests = bench.requests_since(before)
    own = {}
    for key, name in OWN_COUNTERS.items():
        after = operator_counter(operator.metrics_port, name)
        own[key] = None if after is None else after - (own_before[key] or 0)
    cpu_ready = sampler.cpu()
    peak = sampler.peak_rss
    triggers_ready = operator_counters_by(operator.metrics_port, TRIGGERS, "source")
    own_ready = {key: operator_counter(operator.metrics_port, name)
                 for key, name in OWN_COUNTERS.items()}  # fmt: skip

    before = bench.snapshot()
    started = time.monotonic()
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda name: bench.client.delete(RAY_CLUSTER, name, NAMESPACE), names))

    def gone() -> bool:
        pods = bench.pod_count()
        clusters = len(bench.client.list(RAY_CLUSTER, NAMESPACE)["items"])
        progress.show(f"deleting: {clusters} clusters, {pods:,} pods left")
        return pods == 0 and clusters == 0

    to_delete = wait_until(f"{operator.key}: delete", gone, settings.timeout)
    progress.show(f"deleted in {to_delete:.1f}s", final=True)
    delete_requests = bench.requests_since(before)
    own_delete = {}
    for key, name in OWN_COUNTERS.items():
        after = operator_counter(operator.metrics_port, name)
        own_delete[f"{key}_delete"] = None if after is None else after - (own_ready[key] or 0)
    triggers_gone = operator_counters_by(operator.metrics_port, TRIGGERS, "source")
    return {
        "ready_seconds": round(to_ready, 1),
        "pods_per_second": round(settings.pods / (all_created or to_ready), 1),
        "all_pods_created_seconds": round(all_created or to_ready, 1),
        "all_pods_running_seconds": round(all_running or to_ready, 1),
        "api_requests": up_requests,
        "api_requests_total": sum(up_requests.values()),
        **own,
        "cpu_seconds_to_ready": round(cpu_ready - cpu_before, 1),
        "cpu_seconds_delete": round(sampler.cpu() - cpu_ready, 1),
        "peak_rss_bytes": peak,
        "delete_seconds": round(to_delete, 1),
        "delete_api_requests_total": sum(delete_requests.values()),
        "delete_api_requests": delete_requests,
        **own_delete,
        "triggers_to_ready": _grown(triggers_ready, triggers_before),
        "triggers_delete": _grown(triggers_gone, triggers_ready),
    }


def time_to_ready(
    bench: Bench,
    manifest: dict[str, Any],
    timeout: float,
    create: Callable[[dict[str, Any]], object] | None = None,
) -> tuple[float, float]:
    """Seconds until the cluster is ready, and until its head and worker pods existed
    (the operator's part; the rest is kwok making them Running). Both are taken from
    watches opened before the create: polling every 50 ms was too coarse for times of
    about 0.1 s, and added load of its own. ``create`` makes the cluster (default: the
    benchmark's client creates the RayCluster for an operator to act on)."""
    name = manifest["metadata"]["name"]
    seen: dict[str, float] = {}
    done = threading.Event()
    watches: list[tuple[ResourceKind, str | None, str | None, str]] = [
        (RAY_CLUSTER, None, f"metadata.name={name}", "ready"),
        (POD, f"ray.io/cluster={name}", None, "pods"),
    ]
    streams = []
    for kind, labels, fields, what in watches:
        listed = bench.client.list(
            kind, NAMESPACE, limit=1, label_selector=labels, field_selector=fields
        )
        version = str(listed["metadata"]["resourceVersion"])
        stream = bench.client.watch(
            kind, NAMESPACE, resource_version=version, timeout_seconds=int(timeout),
            label_selector=labels, field_selector=fields,
        )  # fmt: skip
        streams.append((stream, what))
    started = time.monotonic()

    def follow(stream: Any, what: str) -> None:
        pods: set[str] = set()
        try:
            for event in stream:
                obj = event.get("object") or {}
                if what == "pods" and event.get("type") == "ADDED":
                    pods.add(str(obj["metadata"]["name"]))
                    if len(pods) >= 2:
                        seen.setdefault("pods", time.monotonic() - started)
                        return
                if what == "ready" and (obj.get("status") or {}).get("state") == "ready":
                    seen.setdefault("ready", time.monotonic() - started)
                    done.set()
                    return
        except Exception:  # closed below once the wait ends
            return

    threads = [threading.Thread(target=follow, args=pair, daemon=True) for pair in streams]
    for thread in threads:
        thread.start()
    try:
        (create or bench.client.create)(manifest)
        if not done.wait(timeout):
            raise TimeoutError(f"{name} not ready after {timeout:.0f}s")
    finally:
        for stream, _ in streams:
            stream.close()
    total = seen["ready"]
    return total, seen.get("pods", total)


def fairness(bench: Bench, operator: Operator, settings: Settings) -> dict[str, Any]:
    """A 1-worker cluster's time to ready on the idle operator, then while another
    cluster scales 0 -> ``fairness_workers``; each the median of ``fairness_runs``."""
    progress = Progress(f"{operator.key} fairness")
    runs = settings.fairness_runs
    node = f"kwok-node-{settings.node_count - 1}"
    idle_runs = [
        time_to_ready(bench, raycluster(f"small-idle-{n}", 1, node), settings.timeout)
        for n in range(runs)
    ]
    idle = statistics.median(run[0] for run in idle_runs)
    idle_pods = statistics.median(run[1] for run in idle_runs)
    progress.show(f"1-worker cluster on an idle operator: ready in {idle:.2f}s "
                  f"(median of {runs})", final=True)  # fmt: skip
    busy_runs = [_during_scale_up(bench, settings, node, n) for n in range(runs)]
    busy = statistics.median(run[0] for run in busy_runs)
    progress.show(f"1-worker cluster during the 0 -> {settings.fairness_workers} scale-up: "
                  f"ready in {busy:.2f}s (median of {runs}: "
                  f"{', '.join(f'{run[0]:.2f}' for run in busy_runs)})", final=True)  # fmt: skip
    platform_runs = [_during_plain_creates(bench, settings, node, n) for n in range(runs)]
    platform = statistics.median(platform_runs)
    progress.show(f"1-worker cluster while a plain client creates {settings.fairness_workers} "
                  f"pods: ready in {platform:.2f}s (median of {runs})",
                  final=True)  # fmt: skip
    return {
        "small_idle_seconds": round(idle, 2),
        "small_platform_seconds": round(platform, 2),
        "small_platform_over_idle": round(platform / idle, 2) if idle else None,
        "small_busy_seconds": round(busy, 2),
        "small_busy_over_idle": round(busy / idle, 2) if idle else None,
        "small_idle_pods_seconds": round(idle_pods, 2),
        "small_busy_pods_seconds": round(statistics.median(run[1] for run in busy_runs), 2),
        "small_busy_runs": [round(run[0], 2) for run in busy_runs],
        "big_seconds": round(statistics.median(run[2] for run in busy_runs), 1),
    }


def _during_plain_creates(bench: Bench, settings: Settings, node: str, n: int) -> float:
    """A 1-worker cluster's time to ready while a plain client (not the operator)
    creates ``fairness_workers`` pods the way the operator's create queue does (4 in
    flight, the same qps): what the control plane and kwok alone make of a scale-up."""
    pod = worker_pod("kwok-node-0")
    with ThreadPoolExecutor(4) as pool:
        creates = [pool.submit(bench.limited.create, pod) for _ in range(settings.fairness_workers)]
        busy, _ = time_to_ready(bench, raycluster(f"small-platform-{n}", 1, node), settings.timeout)
        for create in creates:
            create.result()
    plain = "ray.io/cluster=ceiling"
    with ThreadPoolExecutor(8) as pool:
        items = bench.client.list(POD, NAMESPACE, label_selector=plain)["items"]
        list(pool.map(lambda p: bench.client.delete(POD, p["metadata"]["name"], NAMESPACE), items))
    _clear(bench, settings)
    return busy


def _during_scale_up(
    bench: Bench, settings: Settings, node: str, n: int
) -> tuple[float, float, float]:
    """One 0 -> ``fairness_workers`` scale-up with a 1-worker cluster created as it
    starts: (the small cluster's time to ready, to its pods, the big one's to ready).
    Every cluster is gone again afterwards."""
    big = raycluster("big", 0, "kwok-node-0", max_workers=settings.fairness_workers)
    bench.client.create(big)
    wait_until("big (0 workers) ready", lambda: bench.cluster_ready("big"), settings.timeout)
    started = time.monotonic()
    patch = {"spec": {"workerGroupSpecs": [{**big["spec"]["workerGroupSpecs"][0],
                                             "replicas": settings.fairness_workers}]}}  # fmt: skip
    bench.client.patch(RAY_CLUSTER, "big", NAMESPACE, patch)
    busy, busy_pods = time_to_ready(bench, raycluster(f"small-busy-{n}", 1, node),
                                    settings.timeout)  # fmt: skip
    # ``state`` stays ``ready`` once reached (both operators): count ready workers.
    wait_until("big ready", lambda: bench.ready_workers("big") >= settings.fairness_workers,
               settings.timeout)  # fmt: skip
    big_seconds = time.monotonic() - started
    _clear(bench, settings)
    return busy, busy_pods, big_seconds


def _clear(bench: Bench, settings: Settings) -> None:
    """Delete every RayCluster and wait until neither they nor any pod is left."""
    for item in bench.client.list(RAY_CLUSTER, NAMESPACE)["items"]:
        bench.client.delete(RAY_CLUSTER, item["metadata"]["name"], NAMESPACE)
    wait_until(
        "fairness clusters gone",
        lambda: bench.pod_count() == 0 and not bench.client.list(RAY_CLUSTER, NAMESPACE)["items"],
        settings.timeout,
    )
    time.sleep(2)  # the garbage collector's last deletes (services) land before what follows


def run_operator(
    key: str, state: Path, settings: Settings, fair: bool, logs: Path
) -> dict[str, Any]:
    logs.mkdir(parents=True, exist_ok=True)
    with control_plane(state / f"cluster-{key}", settings) as cluster:
        bench = Bench(cluster, settings)
        operator = start_operator(key, cluster, settings, logs)
        sampler = Sampler(operator.process.pid)
        profiler = None
        if settings.profile is not None and key == "ours":
            profiler = start_profiler(operator.process.pid, settings.profile)
        try:
            # Fairness first, on a quiet control plane; its clusters are gone before the
            # scale-up starts.
            values = fairness(bench, operator, settings) if fair else {}
            values.update(scale_up_and_delete(bench, operator, sampler, settings))
        finally:
            sampler.stop()
            if profiler is not None:
                stop_profiler(profiler)
            operator.stop()
    return values


def run_ceiling(state: Path, settings: Settings) -> dict[str, Any]:
    """The same number of pods from a plain client with the same qps/burst."""
    progress = Progress("ceiling")
    with control_plane(state / "cluster-ceiling", settings) as cluster:
        bench = Bench(cluster, settings)
        pods = [worker_pod(node_of(i, settings)) for i in range(settings.clusters)]
        before = bench.snapshot()
        started = time.monotonic()
        done = 0

        def create(index: int) -> None:
            nonlocal done
            bench.limited.create(pods[index // (settings.workers + 1)])
            done += 1
            progress.show(f"{time.monotonic() - started:6.1f}s  "
                          f"pods {done:,}/{settings.pods:,} created")  # fmt: skip

        with ThreadPoolExecutor(CEILING_CLIENTS) as pool:
            list(pool.map(create, range(settings.pods)))
        created = time.monotonic() - started
        wait_until("ceiling pods Running", lambda: not bench.pods_not_running(), settings.timeout)
        running = time.monotonic() - started
        progress.show(f"{settings.pods:,} pods created in {created:.1f}s, all Running in "
                      f"{running:.1f}s", final=True)  # fmt: skip
        requests = bench.requests_since(before)
    return {
        "ready_seconds": round(running, 1),
        "all_pods_created_seconds": round(created, 1),
        "all_pods_running_seconds": round(running, 1),
        "pods_per_second": round(settings.pods / created, 1),
        "api_requests": requests,
        "api_requests_total": sum(requests.values()),
    }


# -- report --------------------------------------------------------------------------------


def _fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:,.{digits}f}"


def _ratio(ours: Any, theirs: Any) -> str:
    if not isinstance(ours, int | float) or not isinstance(theirs, int | float) or not theirs:
        return "-"
    return f"{ours / theirs:.2f}"


def table(results: dict[str, dict[str, Any]], settings: Settings) -> str:
    ours, theirs, ceiling = (results.get(key, {}) for key in ("ours", "kuberay", "ceiling"))
    rows: list[tuple[str, ...]] = [
        ("metric", "ours", f"KubeRay {kuberay.VERSION}", "ceiling", "ours/KubeRay",
         "ours/ceiling"),
    ]  # fmt: skip

    def row(
        label: str, key: str, *, digits: int = 1, vs_ceiling: str = "", scale: float = 1
    ) -> None:
        values = [side.get(key) for side in (ours, theirs, ceiling)]
        values = [v / scale if isinstance(v, int | float) and scale != 1 else v for v in values]
        against = "-"
        if vs_ceiling == "time":  # fraction of the ceiling's throughput
            against = _ratio(values[2], values[0])
        elif vs_ceiling == "rate":
            against = _ratio(values[0], values[2])
        rows.append((label, *(_fmt(v, digits) for v in values), _ratio(values[0], values[1]),
                     against))  # fmt: skip

    row("time to all ready, s", "ready_seconds", vs_ceiling="time")
    row("all pods created, s", "all_pods_created_seconds", vs_ceiling="time")
    row("all pods Running (kwok), s", "all_pods_running_seconds", vs_ceiling="time")
    row("pods created / s", "pods_per_second", vs_ceiling="rate")
    row("API requests (API server, all clients)", "api_requests_total")
    for verb in SHOWN_VERBS:
        for side in (ours, theirs, ceiling):
            if "api_requests" in side:
                side[f"verb_{verb}"] = side["api_requests"].get(verb, 0)
        row(f"  {verb}", f"verb_{verb}")
    row("operator's own requests", "operator_requests")
    row("operator's reconciles", "operator_reconciles")
    row("operator CPU s, to ready", "cpu_seconds_to_ready")
    row("operator CPU s, delete", "cpu_seconds_delete")
    row("operator peak RSS, MiB", "peak_rss_bytes", scale=MIB)
    row("time to delete all, s", "delete_seconds")
    row("  API requests, delete", "delete_api_requests_total")
    for verb in ("DELETE", "PUT", "PATCH", "POST"):
        for side in (ours, theirs):
            if "delete_api_requests" in side:
                side[f"delete_verb_{verb}"] = side["delete_api_requests"].get(verb, 0)
        row(f"    {verb}", f"delete_verb_{verb}")
    row("  operator's own requests, delete", "operator_requests_delete")
    row("  operator's reconciles, delete", "operator_reconciles_delete")
    if settings.fairness_workers:
        row("1-worker cluster, idle operator, s", "small_idle_seconds", digits=2)
        row(f"1-worker cluster, plain client creating {settings.fairness_workers}, s",
            "small_platform_seconds", digits=2)  # fmt: skip
        row("  that / idle", "small_platform_over_idle", digits=2)
        row(f"1-worker cluster during 0->{settings.fairness_workers}, s", "small_busy_seconds",
            digits=2)  # fmt: skip
        row("  during / idle", "small_busy_over_idle", digits=2)
        row("  its 2 pods created, idle, s", "small_idle_pods_seconds", digits=2)
        row(f"  its 2 pods created, during 0->{settings.fairness_workers}, s",
            "small_busy_pods_seconds", digits=2)  # fmt: skip
        row(f"0->{settings.fairness_workers} cluster ready, s", "big_seconds")
    return format_rows(rows)


def format_rows(rows: Sequence[Sequence[str]]) -> str:
    """Rows of cells as an aligned text table: the first row is the header, the first
    column left-aligned (labels), the others right-aligned (figures)."""
    widths = [max(len(line[i]) for line in rows) for i in range(len(rows[0]))]
    out = [
        " | ".join(cell.ljust(w) if i == 0 else cell.rjust(w)
                   for i, (cell, w) in enumerate(zip(line, widths, strict=True)))
        for line in rows
    ]  # fmt: skip
    out.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(out)


def triggers(results: dict[str, dict[str, Any]]) -> str:
    """Our operator's passes by what queued them, to ready and while deleting."""
    ours = results.get("ours", {})
    lines = []
    for key, label in (("triggers_to_ready", "to ready"), ("triggers_delete", "delete")):
        counts = ours.get(key) or {}
        if counts:
            shown = ", ".join(f"{source} {count:,}" for source, count in counts.items())
            lines.append(f"ours' passes by trigger, {label}: {shown}")
    return "\n".join(lines)


def add_operator_arguments(parser: argparse.ArgumentParser, *, only: str, profile: str) -> None:
    """The options every side-by-side benchmark takes: both operators' client and worker
    settings, what to run, where the report, logs and profile go."""
    parser.add_argument("--qps", type=float, default=100.0, help="both operators' --qps")
    parser.add_argument("--burst", type=int, default=200, help="both operators' --burst")
    parser.add_argument("--concurrency", type=int, default=1,
                        help="both operators' --reconcile-concurrency")  # fmt: skip
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per wait")
    parser.add_argument("--only", default=only, metavar="KEY,...")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the report here")
    parser.add_argument("--logs", type=Path, metavar="DIR", help="keep the operators' logs here")
    parser.add_argument("--profile", type=Path, metavar="PATH", help=profile)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--workers", type=int, default=100, help="workers per cluster")
    parser.add_argument("--fairness-workers", type=int, default=500,
                        help="the big cluster's scale-up (fairness run); 0 skips it")  # fmt: skip
    parser.add_argument("--fairness-runs", type=int, default=3,
                        help="each fairness figure is the median of this many runs")  # fmt: skip
    add_operator_arguments(
        parser,
        only="ours,kuberay,ceiling",
        profile="py-spy: our operator's stacks, collapsed, to PATH",
    )
    args = parser.parse_args()
    sandbox.exit_unless_inside("the benchmark")
    wanted = [key.strip() for key in args.only.split(",") if key.strip()]
    if set(wanted) - {"ours", "kuberay", "ceiling"}:
        parser.error(f"--only: one or more of ours, kuberay, ceiling; got {args.only!r}")
    settings = Settings(args.clusters, args.workers, args.qps, args.burst, args.concurrency,
                        args.fairness_workers, args.timeout, args.profile,
                        args.fairness_runs)  # fmt: skip
    if "kuberay" in wanted:
        kuberay.ensure_built()
    started = time.monotonic()
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="scale-bench-") as state:
        for key in wanted:
            if key == "ceiling":
                results[key] = run_ceiling(Path(state), settings)
            else:
                logs = args.logs or Path(state) / "operator-logs"
                results[key] = run_operator(key, Path(state), settings,
                                            settings.fairness_workers > 0, logs)  # fmt: skip
            print(f"{key}: {json.dumps(results[key])}", file=sys.stderr, flush=True)
    report = {
        "date": datetime.date.today().isoformat(),
        "machine": machine(),
        "settings": {**settings.__dict__, "profile": str(settings.profile or "")},
        "total_seconds": round(time.monotonic() - started, 1),
        "results": results,
    }
    print(f"{settings.clusters} RayClusters x {settings.workers} workers "
          f"({settings.pods:,} pods), qps {settings.qps:g}, burst {settings.burst}, "
          f"reconcile concurrency {settings.concurrency}")  # fmt: skip
    print(table(results, settings))
    print("ours/ceiling: the share of the ceiling's throughput (ceiling time / our time); "
          "API requests exclude the benchmark's own")  # fmt: skip
    print(triggers(results))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
