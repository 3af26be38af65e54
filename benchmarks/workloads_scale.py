"""Benchmark: N RayJobs, then N RayServices, created at once: ours beside KubeRay's.

Each operator gets a fresh local control plane with kwok nodes (``benchmarks.scale``'s
machinery: same qps/burst/reconcile concurrency, CPU and peak RSS from ``/proc``, API
requests from ``apiserver_request_total``) and runs every controller, as users run it
(ours: ``python -m operator_runtime``; a RayJob or RayService needs the RayCluster
controller too). Each kind is a phase of its own with a freshly started operator:

1. a 1-worker RayCluster's time to ``ready`` on the idle operator (median of 3);
2. N workloads created at once, each with its own cluster of 1 head + 2 workers (pod
   templates naming a kwok node), and two more 1-worker RayClusters timed to ``ready``
   during the burst: one right after the workloads' creates, one once half of their
   clusters exist;
3. the time until every workload's cluster is ``ready`` and until the last thing the
   operator controls on kwok exists (below); then deleting every workload until no
   RayCluster and no pod is left.

On kwok no Ray process runs and every connection to a pod's address is refused (the
sandbox routes them to loopback), so the measurement stops where the operator's own part
ends:

- RayJob (K8sJobMode, the default): its submission is attempted, that is the submitter
  batch Job exists and ``status.jobDeploymentStatus`` is past Initializing. Both
  operators create the Job as soon as the cluster is ``ready`` and move to Running; the
  job itself never runs.
- RayService: its cluster's head Service (``<cluster>-head-svc``) exists. The
  RayService's own ``<name>-head-svc`` and ``<name>-serve-svc`` are created only once the
  Serve applications report RUNNING on the cluster's dashboard, which never answers here,
  so neither operator gets there; the report counts them (expected 0).

    .venv/bin/python -m hack.sandbox -- .venv/bin/python -m benchmarks.workloads_scale \\
        [--rayjobs 100] [--rayservices 100] [--qps 100 --burst 200] [--concurrency 1]
        [--only ours,kuberay] [--json PATH] [--logs DIR] [--profile PATH] [--concurrent]
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from benchmarks import scale
from benchmarks.machine import machine
from benchmarks.scale import NAMESPACE, Bench, Progress, Sampler
from hack import kuberay, sandbox
from hack.localcluster import LocalCluster
from operator_runtime.api import RayCluster, RayJob, RayService
from operator_runtime.render import (
    ClusterRenderParams,
    SubmitterParams,
    build_submitter_job,
    owner_reference,
    render_cluster,
)
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.errors import ApiError, NotFound, TransportError
from operator_runtime.runtime.kinds import (
    JOB,
    POD,
    RAY_CLUSTER,
    RAY_JOB,
    RAY_SERVICE,
    SERVICE,
    Object,
    ResourceKind,
)

WORKERS: Final = 2
"""Workers per workload's cluster (1 head + 2 workers)."""
ORIGIN_NAME: Final = "ray.io/originated-from-cr-name"
ORIGIN_KIND: Final = "ray.io/originated-from-crd"
SERVE_CONFIG: Final = """\
applications:
  - name: hello
    import_path: hello:app
    route_prefix: /
    deployments:
      - name: Hello
        num_replicas: 1
"""
KUBERAY_STARTED: Final = {
    "rayjobs": re.compile(r"controllers\.RayJob\s+Starting workers"),
    "rayservices": re.compile(r"controllers\.RayService\s+Starting workers"),
}
"""KubeRay's log line once that controller's caches synced (its /readyz is a ping)."""
RECONCILES: Final = re.compile(
    r'^controller_runtime_reconcile_total\{[^}]*controller="([^"]*)"[^}]*\} (\S+)$', re.M
)


@dataclass(frozen=True)
class Kind:
    """One phase: the workload's kind and what the benchmark waits for."""

    key: str
    resource: ResourceKind
    crd: str
    """The workload's kind as its clusters' ``ray.io/originated-from-crd`` label says."""
    reached_label: str
    """The table's label for the last step the operator controls on kwok."""
    model: type[RayJob] | type[RayService]


RAYJOBS: Final = Kind("rayjobs", RAY_JOB, "RayJob", "time to all submissions attempted, s", RayJob)
RAYSERVICES: Final = Kind(
    "rayservices", RAY_SERVICE, "RayService", "time to all head Services, s", RayService
)


@dataclass(frozen=True)
class Settings:
    rayjobs: int
    rayservices: int
    qps: float
    burst: int
    concurrency: int
    timeout: float
    profile: Path | None = None
    """Where py-spy writes our operator's sampled stacks (one file per phase)."""
    idle_runs: int = 3
    """The idle 1-worker figure is the median of this many runs."""

    def count(self, kind: Kind) -> int:
        return self.rayjobs if kind is RAYJOBS else self.rayservices

    def base(self) -> scale.Settings:
        """``benchmarks.scale``'s settings for the control plane and the operators:
        enough kwok nodes for the bigger phase's pods plus the small cluster's node."""
        biggest = max(self.rayjobs, self.rayservices, 1)
        return scale.Settings(biggest, WORKERS, self.qps, self.burst, self.concurrency, 0,
                              self.timeout, self.profile)  # fmt: skip


# -- manifests -----------------------------------------------------------------------------


def workload(kind: Kind, name: str, node: str) -> dict[str, Any]:
    """A RayJob (K8sJobMode, the default) or a RayService (a one-application
    serveConfigV2) whose cluster is 1 head + ``WORKERS`` workers on ``node``."""
    cluster_spec = scale.raycluster(name, WORKERS, node)["spec"]
    if kind is RAYJOBS:
        spec: dict[str, Any] = {
            "entrypoint": "python -c 'print(1)'",
            "rayClusterSpec": cluster_spec,
        }
    else:
        spec = {"serveConfigV2": SERVE_CONFIG, "rayClusterConfig": cluster_spec}
    return {
        "apiVersion": "ray.io/v1",
        "kind": kind.crd,
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": spec,
    }


# -- what the operators reached ------------------------------------------------------------


@dataclass
class Observation:
    """One poll: per workload, whether its cluster is ready and whether the operator's
    last step on kwok is done."""

    created: set[str]
    """Workloads whose cluster exists (the workload controller's part)."""
    ready: set[str]
    reached: set[str]
    statuses: Counter[str]
    """RayJob: ``jobDeploymentStatus`` counts; RayService: ``serviceStatus`` counts."""
    own_services: int
    """RayService: its ``<name>-head-svc`` and ``<name>-serve-svc`` that exist."""


def observe(bench: Bench, kind: Kind) -> Observation:
    client = bench.client
    items = client.list(kind.resource, NAMESPACE)["items"]
    selector = f"{ORIGIN_KIND}={kind.crd}"
    clusters = client.list(RAY_CLUSTER, NAMESPACE, label_selector=selector)["items"]
    ready_clusters = {
        str(c["metadata"]["name"]): str((c["metadata"].get("labels") or {}).get(ORIGIN_NAME))
        for c in clusters
        if (c.get("status") or {}).get("state") == "ready"
    }
    ready = set(ready_clusters.values())
    created = {str((c["metadata"].get("labels") or {}).get(ORIGIN_NAME)) for c in clusters}
    statuses: Counter[str] = Counter()
    reached: set[str] = set()
    own_services = 0
    if kind is RAYJOBS:
        submitters = {str(j["metadata"]["name"]) for j in client.list(JOB, NAMESPACE)["items"]}
        for item in items:
            name, state = item["metadata"]["name"], (item.get("status") or {})
            deployment = str(state.get("jobDeploymentStatus") or "")
            statuses[deployment or "(none)"] += 1
            if name in submitters and deployment not in ("", "New", "Initializing"):
                reached.add(name)
    else:
        services = {str(s["metadata"]["name"]) for s in client.list(SERVICE, NAMESPACE)["items"]}
        for cluster, owner in ready_clusters.items():
            if f"{cluster}-head-svc" in services:
                reached.add(owner)
        for item in items:
            name = item["metadata"]["name"]
            statuses[str((item.get("status") or {}).get("serviceStatus") or "(none)")] += 1
            own_services += sum(f"{name}-{s}" in services for s in ("head-svc", "serve-svc"))
    return Observation(created, ready, reached, statuses, own_services)


def reconciles_by_controller(port: int) -> Counter[str]:
    """``controller_runtime_reconcile_total`` per controller (both operators)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
            text = answer.read().decode()
    except OSError:
        return Counter()
    totals: Counter[str] = Counter()
    for controller, value in RECONCILES.findall(text):
        totals[controller.lower().removesuffix("-controller")] += int(float(value))
    return totals


# -- one phase -----------------------------------------------------------------------------


def delete_all(bench: Bench, resource: ResourceKind, what: str, timeout: float) -> float:
    """Delete every object of ``resource``; seconds until none, no RayCluster and no pod
    is left."""
    started = time.monotonic()
    names = [item["metadata"]["name"] for item in bench.client.list(resource, NAMESPACE)["items"]]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda name: bench.client.delete(resource, name, NAMESPACE), names))
    progress = Progress(what)

    def gone() -> bool:
        left = len(bench.client.list(resource, NAMESPACE)["items"])
        clusters = len(bench.client.list(RAY_CLUSTER, NAMESPACE)["items"])
        pods = bench.pod_count()
        progress.show(f"{left} left, {clusters} clusters, {pods} pods")
        return left == 0 and clusters == 0 and pods == 0

    scale.wait_until(what, gone, timeout)
    return time.monotonic() - started


def small_idle(
    bench: Bench,
    settings: Settings,
    node: str,
    tag: str,
    create: Callable[[dict[str, Any]], object] | None = None,
) -> tuple[float, float]:
    """The 1-worker cluster on its own: the medians of its seconds to ready and to both
    pods created."""
    runs = [
        scale.time_to_ready(bench, scale.raycluster(f"small-{tag}-idle-{n}", 1, node),
                            settings.timeout, create)
        for n in range(settings.idle_runs)
    ]  # fmt: skip
    delete_all(bench, RAY_CLUSTER, "idle clusters gone", settings.timeout)
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def run_phase(
    key: str, kind: Kind, cluster: LocalCluster, bench: Bench, settings: Settings, logs: Path
) -> dict[str, Any]:
    base = settings.base()
    count = settings.count(kind)
    operator = scale.start_operator(key, cluster, base, logs, controllers=None)
    progress = Progress(f"{key} {kind.key}")
    sampler = Sampler(operator.process.pid)
    profiler = None
    try:
        if key == "kuberay":
            started_line = KUBERAY_STARTED[kind.key]
            scale.wait_until(f"KubeRay's {kind.crd} controller started",
                             lambda: bool(started_line.search(operator.log.read_text())),
                             scale.OPERATOR_READY_TIMEOUT)  # fmt: skip
        if settings.profile is not None and key == "ours":
            output = settings.profile.with_name(f"{settings.profile.stem}-{kind.key}"
                                                f"{settings.profile.suffix}")  # fmt: skip
            profiler = scale.start_profiler(operator.process.pid, output)
        small_node = f"kwok-node-{base.node_count - 1}"
        idle = small_idle(bench, settings, small_node, kind.key[:4])
        progress.show(f"1-worker cluster on the idle operator: ready in {idle[0]:.2f}s", final=True)

        names = [f"{kind.key[:4]}-{index:03}" for index in range(count)]
        before, cpu_before = bench.snapshot(), sampler.cpu()
        own_before = {k: scale.operator_counter(operator.metrics_port, n)
                      for k, n in scale.OWN_COUNTERS.items()}  # fmt: skip
        by_controller_before = reconciles_by_controller(operator.metrics_port)
        sampler.peak_rss = 0
        started = time.monotonic()
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(
                lambda i: bench.client.create(workload(kind, names[i], scale.node_of(i, base))),
                range(count),
            ))  # fmt: skip
        times, last, busy, mid = small_during_burst(
            bench, kind, settings, started, progress, small_node
        )
        progress.show(burst_summary(count, times, busy, mid), final=True)
        requests = bench.requests_since(before)
        own: dict[str, int | None] = {}
        for k, n in scale.OWN_COUNTERS.items():
            after = scale.operator_counter(operator.metrics_port, n)
            own[k] = None if after is None else after - (own_before[k] or 0)
        by_controller = reconciles_by_controller(operator.metrics_port) - by_controller_before
        cpu_reached, peak = sampler.cpu(), sampler.peak_rss

        delete_small(bench, kind, settings.timeout)
        deleted = delete_all(bench, kind.resource, f"{key} {kind.key} delete", settings.timeout)
        progress.show(f"deleted in {deleted:.1f}s", final=True)
        return {
            **timed_figures(count, times, requests),
            **own,
            "reconciles_by_controller": dict(sorted(by_controller.items())),
            "cpu_seconds_to_reached": round(cpu_reached - cpu_before, 1),
            "cpu_seconds_delete": round(sampler.cpu() - cpu_reached, 1),
            "peak_rss_bytes": peak,
            "delete_seconds": round(deleted, 1),
            **small_figures(idle, busy, mid),
            "statuses": dict(sorted(last.statuses.items())),
            "own_services": last.own_services,
        }
    finally:
        sampler.stop()
        if profiler is not None:
            scale.stop_profiler(profiler)
        operator.stop()


def small_figures(
    idle: tuple[float, float], busy: tuple[float, float], mid: tuple[float, float]
) -> dict[str, Any]:
    """The 1-worker cluster's figures, each (to ready, to its pods created): on its own,
    right after the burst's creates, halfway through them, and the ratios of the times
    to ready."""
    figures: dict[str, Any] = {
        "small_idle_seconds": round(idle[0], 2),
        "small_idle_pods_seconds": round(idle[1], 2),
    }
    for key, (ready, pods) in (("busy", busy), ("mid", mid)):
        figures[f"small_{key}_seconds"] = round(ready, 2)
        figures[f"small_{key}_over_idle"] = round(ready / idle[0], 2) if idle[0] else None
        figures[f"small_{key}_pods_seconds"] = round(pods, 2)
    return figures


def timed_figures(count: int, times: dict[str, float], requests: dict[str, int]) -> dict[str, Any]:
    """The figures every subject has: its times and the API requests of the burst."""
    return {
        "count": count,
        "clusters_created_seconds": round(times["created"], 1),
        "clusters_ready_seconds": round(times["ready"], 1),
        "reached_seconds": round(times["reached"], 1),
        "api_requests": requests,
        "api_requests_total": sum(requests.values()),
    }


def small_during_burst(
    bench: Bench,
    kind: Kind,
    settings: Settings,
    started: float,
    progress: Progress,
    node: str,
    create: Callable[[dict[str, Any]], object] | None = None,
    errors: list[BaseException] | None = None,
) -> tuple[dict[str, float], Observation, tuple[float, float], tuple[float, float]]:
    """While the burst started at ``started`` is waited for, two 1-worker RayClusters are
    timed to ready (``small_names``): one right after the burst's workloads were created,
    one once half of their clusters exist (the operator is then in the middle
    of the burst's work, whoever's passes came first). Returns the burst's times, its
    last observation and each small cluster's seconds to ready and to its pods created."""
    count = settings.count(kind)
    right_after, halfway_name = small_names(kind)

    def timed(cluster: str) -> tuple[float, float]:
        manifest = scale.raycluster(cluster, 1, node)
        return scale.time_to_ready(bench, manifest, settings.timeout, create)

    with ThreadPoolExecutor(2) as small_pool:
        first = small_pool.submit(timed, right_after)
        mid: list[Future[tuple[float, float]]] = []

        def halfway(seen: Observation) -> None:
            if not mid and 2 * len(seen.created) >= count:
                mid.append(small_pool.submit(timed, halfway_name))

        times, last = wait_for_workloads(
            bench, kind, count, started, settings.timeout, progress, errors, halfway
        )
        return times, last, first.result(), mid[0].result()


def small_names(kind: Kind) -> tuple[str, str]:
    """The 1-worker clusters timed during a burst of ``kind``: right after its creates,
    and halfway through."""
    name = f"small-{kind.key[:4]}-busy"
    return name, f"{name}-mid"


def burst_summary(
    count: int, times: dict[str, float], busy: tuple[float, float], mid: tuple[float, float]
) -> str:
    return (
        f"all {count} clusters ready in {times['ready']:.1f}s, all reached in "
        f"{times['reached']:.1f}s; 1-worker cluster during the burst: {busy[0]:.2f}s "
        f"(halfway: {mid[0]:.2f}s)"
    )


def delete_small(bench: Bench, kind: Kind, timeout: float) -> None:
    """Delete the burst's two 1-worker clusters (``small_names``) before the workloads'
    timed delete, and wait until they and their pods are gone."""
    names = small_names(kind)
    for cluster in names:
        bench.client.delete(RAY_CLUSTER, cluster, NAMESPACE)

    def gone(cluster: str) -> bool:
        pods = bench.client.list(POD, NAMESPACE, label_selector=f"ray.io/cluster={cluster}")
        try:
            bench.client.get(RAY_CLUSTER, cluster, NAMESPACE)
        except NotFound:
            return not pods["items"]
        return False

    scale.wait_until(f"{' and '.join(names)} gone", lambda: all(map(gone, names)), timeout)


def wait_for_workloads(
    bench: Bench,
    kind: Kind,
    count: int,
    started: float,
    timeout: float,
    progress: Progress,
    errors: list[BaseException] | None = None,
    on_seen: Callable[[Observation], object] = lambda _: None,
) -> tuple[dict[str, float], Observation]:
    """Poll every 0.5 s until every workload's cluster is ready and its last step is
    done: the seconds until all clusters existed (``created``), all were ready
    (``ready``) and all reached (``reached``); and the last observation. ``on_seen``
    hears every observation."""
    times: dict[str, float] = {}
    while True:
        elapsed = time.monotonic() - started
        seen = observe(bench, kind)
        on_seen(seen)
        for what, done in (("created", len(seen.created) >= count),
                           ("ready", len(seen.ready) >= count)):  # fmt: skip
            if done:
                times.setdefault(what, elapsed)
        progress.show(f"{elapsed:6.1f}s  clusters ready {len(seen.ready)}/{count}  "
                      f"reached {len(seen.reached)}/{count}  {dict(seen.statuses)}")  # fmt: skip
        if "ready" in times and len(seen.reached) >= count:
            times.setdefault("created", elapsed)
            return {**times, "reached": elapsed}, seen
        if errors:
            raise RuntimeError(f"{kind.key}: the ceiling's writes failed") from errors[0]
        if elapsed > timeout:
            raise TimeoutError(f"{kind.key}: {len(seen.ready)}/{count} clusters ready, "
                               f"{len(seen.reached)}/{count} reached")  # fmt: skip
        time.sleep(0.5)


# -- the ceiling: no operator, a plain client writing what an operator must ----------------


@dataclass
class CeilingWriter:
    """What any operator has to write for one workload, written by a plain client with
    the operators' qps/burst (``Bench.limited``) and nothing else: the workload's
    RayCluster, the cluster's head Service and pods (rendered as our operator renders
    them), and, once kwok has the pods Running and Ready, the cluster's ``ready``
    status; for a RayJob then its submitter Job and ``jobDeploymentStatus: Running``.
    No reads, no events, no finalizers, no retries: the control plane's own limit for
    this burst, against which both operators are measured."""

    bench: Bench
    kind: Kind
    settings: scale.Settings
    workloads: dict[str, Object] = field(default_factory=dict)
    """Cluster name -> the workload it was made for."""
    clusters: dict[str, RayCluster] = field(default_factory=dict)
    pods: dict[str, int] = field(default_factory=dict)
    """Cluster name -> how many pods it has (head and workers)."""
    errors: list[BaseException] = field(default_factory=list)

    def materialize(self, index: int, name: str) -> None:
        try:
            made = self.bench.client.create(
                workload(self.kind, name, scale.node_of(index, self.settings))
            )  # the workload itself is the benchmark's, as for the operators
            spec = made["spec"]["rayClusterSpec" if self.kind is RAYJOBS else "rayClusterConfig"]
            cluster_name = f"{name}-cluster"
            manifest = {
                "apiVersion": "ray.io/v1",
                "kind": "RayCluster",
                "metadata": {
                    "name": cluster_name,
                    "namespace": NAMESPACE,
                    "labels": {ORIGIN_KIND: self.kind.crd, ORIGIN_NAME: name},
                    "ownerReferences": [owner_reference(self.kind.model.model_validate(made))],
                },
                "spec": spec,
            }
            self.workloads[cluster_name] = made
            self._cluster(manifest, self.bench.limited)
        except BaseException as exc:
            self.errors.append(exc)
            raise

    def small_cluster(self, manifest: dict[str, Any]) -> None:
        """The 1-worker cluster timed beside the burst, written by a client of its own
        with no rate limit: what the control plane itself allows it while the burst
        loads it. Through the burst's limiter it waited behind every write queued
        before it (3.5 s for 100 RayJobs), a figure of that client, not of the API
        server or kwok."""
        self._cluster(manifest, self.bench.client)

    def _cluster(self, manifest: dict[str, Any], client: KubeClient) -> None:
        """Create a RayCluster and what an operator makes for it: its head Service and
        pods."""
        cluster = RayCluster.model_validate(client.create(manifest))
        name = cluster.metadata.name
        self.clusters[name] = cluster
        children = list(render_cluster(params=ClusterRenderParams(cluster=cluster)))
        self.pods[name] = sum(child["kind"] == "Pod" for child in children)
        for child in children:
            client.create(child)

    def on_pods_ready(self, cluster_name: str, pool: ThreadPoolExecutor) -> None:
        """All of a cluster's pods are Running and Ready: a workload's cluster's writes
        take their turn in the burst's pool, the 1-worker cluster's status is written at
        once by its own client."""
        if cluster_name in self.workloads:
            pool.submit(self.ready, cluster_name)
        else:
            self.ready(cluster_name)

    def ready(self, cluster_name: str) -> None:
        try:
            small = cluster_name not in self.workloads
            client = self.bench.client if small else self.bench.limited
            workers = self.pods[cluster_name] - 1
            status = {"state": "ready", "readyWorkerReplicas": workers}
            client.patch(RAY_CLUSTER, cluster_name, NAMESPACE, {"status": status},
                         subresource="status")  # fmt: skip
            if self.kind is not RAYJOBS or small:
                return
            made = self.workloads[cluster_name]
            name = str(made["metadata"]["name"])
            submitter = build_submitter_job(params=SubmitterParams(
                job=RayJob.model_validate(made), job_id=f"{name}-1",
                dashboard_url=f"{cluster_name}-head-svc.{NAMESPACE}.svc.cluster.local:8265",
                cluster=self.clusters[cluster_name],
            ))  # fmt: skip
            client.create(submitter)
            state = {"jobDeploymentStatus": "Running", "rayClusterName": cluster_name}
            client.patch(RAY_JOB, name, NAMESPACE, {"status": state}, subresource="status")
        except BaseException as exc:
            self.errors.append(exc)
            raise


class ClustersReady:
    """A watch of the namespace's head and worker pods that calls ``on_ready(cluster)``
    once per cluster, when all ``pods[cluster]`` of its pods are Running and Ready: how
    an operator learns it from its informer, without polling the API server."""

    def __init__(
        self, bench: Bench, pods: dict[str, int], on_ready: Callable[[str], object]
    ) -> None:
        self.bench, self.pods, self.on_ready = bench, pods, on_ready
        self._ready: dict[str, set[str]] = {}
        self._fired: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ceiling-pods", daemon=True)
        self._version = ""

    def __enter__(self) -> ClustersReady:
        listing = self.bench.client.list(POD, NAMESPACE, label_selector=self._selector)
        self._version = str(listing["metadata"]["resourceVersion"])
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    _selector: Final = "ray.io/node-type in (head,worker)"

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                stream = self.bench.client.watch(
                    POD, NAMESPACE, resource_version=self._version,
                    label_selector=self._selector, timeout_seconds=30, inactivity_timeout=1.0,
                )  # fmt: skip
                for event in stream:
                    self._take(event)
                    if self._stop.is_set():
                        stream.close()
                        return
            except (TransportError, ApiError):
                continue

    def _take(self, event: Object) -> None:
        pod = event.get("object") or {}
        metadata = pod.get("metadata") or {}
        self._version = str(metadata.get("resourceVersion") or self._version)
        cluster = str((metadata.get("labels") or {}).get("ray.io/cluster") or "")
        if event.get("type") not in ("ADDED", "MODIFIED") or not cluster:
            return
        status = pod.get("status") or {}
        ready = status.get("phase") == "Running" and any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in status.get("conditions") or ()
        )
        if not ready:
            return
        pods = self._ready.setdefault(cluster, set())
        pods.add(str(metadata.get("uid")))
        wanted = self.pods.get(cluster)
        if wanted is not None and len(pods) >= wanted and cluster not in self._fired:
            self._fired.add(cluster)
            self.on_ready(cluster)


def run_ceiling_phase(kind: Kind, bench: Bench, settings: Settings) -> dict[str, Any]:
    """The same burst with no operator: ``CeilingWriter`` writes, and the same
    observation as for the operators times it."""
    base = settings.base()
    count = settings.count(kind)
    progress = Progress(f"ceiling {kind.key}")
    names = [f"{kind.key[:4]}-{index:03}" for index in range(count)]
    writer = CeilingWriter(bench, kind, base)
    small_node = f"kwok-node-{base.node_count - 1}"
    with (
        ThreadPoolExecutor(scale.CEILING_CLIENTS) as pool,
        ClustersReady(bench, writer.pods, lambda cluster: writer.on_pods_ready(cluster, pool)),
    ):
        idle = small_idle(bench, settings, small_node, kind.key[:4], writer.small_cluster)
        progress.show(f"1-worker cluster, plain client: ready in {idle[0]:.2f}s", final=True)
        before = bench.snapshot()
        started = time.monotonic()
        for index, name in enumerate(names):
            pool.submit(writer.materialize, index, name)
        times, last, busy, mid = small_during_burst(
            bench, kind, settings, started, progress, small_node, writer.small_cluster,
            writer.errors,
        )  # fmt: skip
    progress.show(burst_summary(count, times, busy, mid), final=True)
    requests = bench.requests_since(before)
    delete_small(bench, kind, settings.timeout)
    deleted = delete_all(bench, kind.resource, f"ceiling {kind.key} delete", settings.timeout)
    return {
        **timed_figures(count, times, requests),
        **small_figures(idle, busy, mid),
        "delete_seconds": round(deleted, 1),
        "statuses": dict(sorted(last.statuses.items())),
        "own_services": last.own_services,
    }


def run_operator(key: str, state: Path, settings: Settings, logs: Path) -> dict[str, Any]:
    logs.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {}
    with scale.control_plane(state / f"cluster-{key}", settings.base()) as cluster:
        bench = Bench(cluster, settings.base())
        for kind in (RAYJOBS, RAYSERVICES):
            if not settings.count(kind):
                continue
            if key == "ceiling":
                results[kind.key] = run_ceiling_phase(kind, bench, settings)
            else:
                results[kind.key] = run_phase(key, kind, cluster, bench, settings, logs)
                print(f"{key} {kind.key}: {json.dumps(results[kind.key])}", file=sys.stderr,
                      flush=True)  # fmt: skip
    return results


# -- report --------------------------------------------------------------------------------


def table(results: dict[str, dict[str, Any]], kind: Kind) -> str:
    """Ours beside KubeRay, and the ceiling's column with each operator's time over
    the ceiling's when the run had one."""
    ours, theirs, ceiling = (
        results.get(key, {}).get(kind.key, {}) for key in ("ours", "kuberay", "ceiling")
    )
    with_ceiling = bool(ceiling)
    header: tuple[str, ...] = ("metric", "ours", f"KubeRay {kuberay.VERSION}", "ours/KubeRay")
    if with_ceiling:
        header += ("ceiling", "ours/ceiling", "KubeRay/ceiling")
    rows: list[tuple[str, ...]] = [header]

    def row(label: str, values: list[Any], digits: int = 1) -> None:
        cells = (label, *(scale._fmt(v, digits) for v in values[:2]),
                 scale._ratio(values[0], values[1]))  # fmt: skip
        if with_ceiling:
            cells += (scale._fmt(values[2], digits), scale._ratio(values[0], values[2]),
                      scale._ratio(values[1], values[2]))  # fmt: skip
        rows.append(cells)

    def key_row(label: str, key: str, *, digits: int = 1, scale_by: float = 1) -> None:
        values = [side.get(key) for side in (ours, theirs, ceiling)]
        row(label, [v / scale_by if isinstance(v, int | float) and scale_by != 1 else v
                    for v in values], digits)  # fmt: skip

    def sub_row(label: str, key: str, sub: str) -> None:
        row(label, [side.get(key, {}).get(sub, 0) if side else None
                    for side in (ours, theirs, ceiling)])  # fmt: skip

    key_row("time to all clusters ready, s", "clusters_ready_seconds")
    key_row("  all clusters created, s", "clusters_created_seconds")
    key_row(kind.reached_label, "reached_seconds")
    key_row("API requests (API server, all clients)", "api_requests_total")
    for verb in scale.SHOWN_VERBS:
        sub_row(f"  {verb}", "api_requests", verb)
    key_row("operator's own requests", "operator_requests")
    key_row("operator's reconciles", "operator_reconciles")
    controllers = sorted({*ours.get("reconciles_by_controller", {}),
                          *theirs.get("reconciles_by_controller", {})})  # fmt: skip
    for controller in controllers:
        sub_row(f"  {controller}", "reconciles_by_controller", controller)
    key_row("operator CPU s, to reached", "cpu_seconds_to_reached")
    key_row("operator CPU s, delete", "cpu_seconds_delete")
    key_row("operator peak RSS, MiB", "peak_rss_bytes", scale_by=scale.MIB)
    key_row("time to delete all, s", "delete_seconds")
    key_row("1-worker cluster, idle, s", "small_idle_seconds", digits=2)
    key_row("1-worker cluster during the burst, s", "small_busy_seconds", digits=2)
    key_row("  during / idle", "small_busy_over_idle", digits=2)
    key_row("  its 2 pods created, idle, s", "small_idle_pods_seconds", digits=2)
    key_row("  its 2 pods created, during the burst, s", "small_busy_pods_seconds", digits=2)
    key_row("1-worker cluster, halfway through, s", "small_mid_seconds", digits=2)
    key_row("  halfway / idle", "small_mid_over_idle", digits=2)
    key_row("  its 2 pods created, halfway, s", "small_mid_pods_seconds", digits=2)
    if kind is RAYSERVICES:
        key_row("RayService head/serve Services made", "own_services")
    text = scale.format_rows(rows)
    statuses = {key: results.get(key, {}).get(kind.key, {}).get("statuses")
                for key in ("ours", "kuberay", "ceiling")}  # fmt: skip
    field_name = "jobDeploymentStatus" if kind is RAYJOBS else "serviceStatus"
    return (
        text
        + f"\n{field_name} when reached: "
        + "; ".join(f"{key} {value}" for key, value in statuses.items() if value is not None)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rayjobs", type=int, default=100, help="RayJobs at once; 0 skips")
    parser.add_argument("--rayservices", type=int, default=100,
                        help="RayServices at once; 0 skips")  # fmt: skip
    parser.add_argument("--idle-runs", type=int, default=3,
                        help="the idle 1-worker figure: the median of this many runs")  # fmt: skip
    scale.add_operator_arguments(
        parser, only="ours,kuberay,ceiling", profile="py-spy: our operator's stacks, to PATH-<kind>"
    )
    parser.add_argument("--concurrent", action="store_true",
                        help="run the operators at the same time, each on its own control "
                             "plane (smoke tests: half the wall time, but the two compete "
                             "for CPU, so the figures are not comparable)")  # fmt: skip
    args = parser.parse_args()
    sandbox.exit_unless_inside("the benchmark")
    wanted = [key.strip() for key in args.only.split(",") if key.strip()]
    if not wanted or set(wanted) - {"ours", "kuberay", "ceiling"}:
        parser.error(f"--only: one or more of ours, kuberay, ceiling; got {args.only!r}")
    settings = Settings(args.rayjobs, args.rayservices, args.qps, args.burst, args.concurrency,
                        args.timeout, args.profile, args.idle_runs)  # fmt: skip
    if "kuberay" in wanted:
        kuberay.ensure_built()
    started = time.monotonic()
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="workloads-bench-") as state:
        logs = args.logs or Path(state) / "operator-logs"
        if args.concurrent:
            with ThreadPoolExecutor(len(wanted)) as pool:
                runs = {key: pool.submit(run_operator, key, Path(state), settings, logs)
                        for key in wanted}  # fmt: skip
                results = {key: run.result() for key, run in runs.items()}
        else:
            for key in wanted:
                results[key] = run_operator(key, Path(state), settings, logs)
    report = {
        "date": datetime.date.today().isoformat(),
        "machine": machine(),
        "settings": {
            **settings.__dict__,
            "profile": str(settings.profile or ""),
            "concurrent": args.concurrent,
        },
        "total_seconds": round(time.monotonic() - started, 1),
        "results": results,
    }
    print(f"qps {settings.qps:g}, burst {settings.burst}, reconcile concurrency "
          f"{settings.concurrency}; cluster per workload: 1 head, {WORKERS} workers")  # fmt: skip
    for kind in (RAYJOBS, RAYSERVICES):
        if settings.count(kind):
            print(f"\n{settings.count(kind)} {kind.crd}s created at once")
            print(table(results, kind))
    print("\nAPI requests exclude the benchmark's own; 'reached' is the last step the operator "
          "controls on kwok (see benchmarks/README.md)")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
