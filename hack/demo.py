"""``make demo``: the README's quickstart, for real, on a real node.

1. A local control plane whose only node is real (kubelet, containerd, runc, the CNI
   bridge, CoreDNS and kube-proxy: ``hack/node``), with the operator's image (``make
   image``) and the Ray stand-in (``make ray-image``) loaded on it: nothing is pulled.
2. ``pulumi up`` of ``examples/quickstart`` through the engine built here (``make
   pulumi-engine``), as the README has a user run it: the ``RayOperator`` component
   installs the CRDs, the RBAC and the operator's Deployment, whose pod runs our image;
   the RayCluster ``demo`` follows, and ``up`` returns once the operator reports it
   ``ready``: its head and two workers Running and Ready by their own probes.
3. ``ray status`` in the head pod, until it lists the three Ray nodes.
4. ``examples/manifests/rayjob-local.yaml``: a RayJob on a cluster of its own, to
   Complete, and its submitter Job's log.
5. Teardown: the RayJob deleted, ``pulumi destroy``, every pod gone; then (in a
   ``finally``, whatever happened before) the node and the control plane stopped.

Every wait is bounded by what the waited-for thing promises (the engine's own timeouts,
the RayJob's ``activeDeadlineSeconds``, pods' grace periods), not by a guess of how fast
two cores are.
"""

from __future__ import annotations

import datetime
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml

from components.operator import DEFAULT_NAMESPACE
from hack import pulumi as engine
from hack import sandbox
from hack.image import built as operator_image
from hack.localcluster import LocalCluster
from hack.node.cluster import start_real_node_cluster
from hack.raystatus import ray_status

REPO_ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = REPO_ROOT / "examples" / "quickstart"
JOB_SAMPLE = REPO_ROOT / "examples" / "manifests" / "rayjob-local.yaml"
STACK = "dev"
OPERATOR_IMAGE = "registry.invalid/pulumi-ray/operator:demo"
"""Where the node has our operator's image: under ``.invalid``, a name no pull could
ever reach. The stack pins it by digest, as the README has a user do."""
OPERATOR_DEPLOYMENT = "deployment/ray-operator"
"""The quickstart's ``RayOperator`` is named ``ray-operator``, in the component's default
namespace."""
CLUSTER = "demo"
"""The quickstart's RayCluster, in ``default``: a head and two workers, one container
each, named ``ray``."""
RAY_NODES = 3
PULUMI_TIMEOUT = 1800.0
"""A stop for a hung engine only: the engine bounds each of its own waits (10 minutes
for the Deployment, as for the RayCluster's ``ready``)."""
RAY_STATUS_SECONDS = 120.0
"""From the pods Ready to every worker in ``ray status``: a worker's readiness probe
already asks its raylet, which registered with the head's GCS; the head's report
refreshes every few seconds."""
DELETE_SECONDS = 120.0
"""For pods to go: the operator's grace period is 45 s, a Ray pod's 30 s."""

T = TypeVar("T")


def _say(message: str) -> None:
    print(message, flush=True)


def _show(cluster: LocalCluster, *args: str) -> None:
    _say(f"\n$ kubectl {' '.join(args)}")
    _say(cluster.kubectl(*args).stdout.rstrip())


def _wait(what: str, found: Callable[[], T | None], timeout: float,
          explain: Callable[[], object] = lambda: "") -> tuple[T, float]:  # fmt: skip
    """Poll ``found`` every 2 s until it returns something; that and the seconds it took.
    Says what it waits for, and every 30 s that it still waits."""
    _say(f"waiting for {what} (up to {timeout:.0f} s) ...")
    started = last_said = time.monotonic()
    while (value := found()) is None:
        now = time.monotonic()
        if now - started > timeout:
            raise TimeoutError(f"{what}: not after {timeout:.0f} s; last seen: {explain()}")
        if now - last_said >= 30:
            _say(f"  ... {now - started:.0f} s")
            last_said = now
        time.sleep(2)
    return value, time.monotonic() - started


def _time(stamp: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(stamp)


@dataclass
class Timings:
    """What the demo measured, in the order it happened, for the summary at the end."""

    rows: list[tuple[str, float]] = field(default_factory=list)

    def add(self, what: str, seconds: float) -> None:
        self.rows.append((what, seconds))
        _say(f"[{seconds:6.1f} s] {what}")

    def summary(self) -> str:
        return "\n".join(f"  {seconds:7.1f} s  {what}" for what, seconds in self.rows)


@dataclass(frozen=True)
class QuickstartStack:
    """``examples/quickstart`` in a scratch directory (the engine writes
    ``Pulumi.<stack>.yaml`` beside ``Pulumi.yaml``, so never in the repository), run by
    the engine built here, with its state in a local file backend and ``KUBECONFIG``
    naming the demo's cluster, as ``hack.localcluster up`` has a user export it."""

    pulumi: Path
    work_dir: Path
    env: dict[str, str]

    @classmethod
    def create(cls, cluster: LocalCluster, state_dir: Path,
               program: Path = QUICKSTART) -> QuickstartStack:  # fmt: skip
        """``program`` (the quickstart unless said) copied under ``state_dir``."""
        work_dir = state_dir / program.name
        shutil.copytree(program, work_dir, ignore=shutil.ignore_patterns("__pycache__"))
        engine.use_project_virtualenv(work_dir)
        built = engine.ensure_built()
        env = {**engine.engine_env(state_dir / "pulumi", built),
               "KUBECONFIG": str(cluster.kubeconfig)}  # fmt: skip
        return cls(built.path("pulumi"), work_dir, env)

    def run(self, *args: str) -> float:
        """``pulumi ARGS``, its output shown as it comes; the seconds it took. The CLI and
        its plugins run in a process group of their own, stopped whole if the demo is."""
        command = [*args, "--non-interactive"]
        _say(f"\n$ pulumi {' '.join(command)}")
        started = time.monotonic()
        process = subprocess.Popen([str(self.pulumi), *command], cwd=self.work_dir,
                                   env=self.env, start_new_session=True)  # fmt: skip
        try:
            code = process.wait(timeout=PULUMI_TIMEOUT)
        finally:
            _stop_group(process.pid)
        if code != 0:
            raise RuntimeError(f"pulumi {' '.join(args)} exited {code}")
        return time.monotonic() - started


def _stop_group(pgid: int) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        time.sleep(2)


def _quickstart_up(cluster: LocalCluster, state_dir: Path, timings: Timings) -> QuickstartStack:
    stack = QuickstartStack.create(cluster, state_dir)
    reference = f"{OPERATOR_IMAGE.rsplit(':', 1)[0]}@{operator_image().digest}"
    stack.run("stack", "init", STACK)
    stack.run("config", "set", "operatorImage", reference)
    timings.add("pulumi up: the operator's pod and the RayCluster ready",
                stack.run("up", "--yes"))  # fmt: skip
    _show(cluster, "get", "rayclusters", "-o", "wide")
    _show(cluster, "get", "pods", "-A", "-o", "wide")
    return stack


def _cluster_ready(cluster: LocalCluster, timings: Timings) -> None:
    """Times the RayCluster from its creation to its pods Ready (the API server's clock
    on both ends) and to its nodes in ``ray status``."""
    created = _time(cluster.get_json("raycluster", CLUSTER)["metadata"]["creationTimestamp"])
    pods = cluster.get_json("pods", "-l", f"ray.io/cluster={CLUSTER}")["items"]
    ready = [
        _time(condition["lastTransitionTime"])
        for pod in pods
        for condition in pod["status"].get("conditions", [])
        if condition["type"] == "Ready" and condition["status"] == "True"
    ]
    if len(ready) != RAY_NODES:
        raise RuntimeError(f"RayCluster {CLUSTER} is ready with {len(ready)} Ready pods")
    timings.add(f"RayCluster created -> its {RAY_NODES} pods Ready",
                (max(ready) - created).total_seconds())  # fmt: skip
    (head,) = (p["metadata"]["name"] for p in pods
               if p["metadata"]["labels"].get("ray.io/node-type") == "head")  # fmt: skip
    seen: list[str] = [""]

    def all_nodes() -> str | None:
        status = ray_status(cluster, "default", head, "ray")
        seen[0] = status.output
        return status.output if status.alive == RAY_NODES else None

    _say(f"\n$ kubectl exec {head} -c ray -- ray status")
    output, _ = _wait(f"{RAY_NODES} alive nodes in `ray status`", all_nodes,
                      RAY_STATUS_SECONDS, explain=lambda: seen[0][-1500:])  # fmt: skip
    now = datetime.datetime.now(datetime.UTC)
    _say(output.rstrip())
    timings.add(f"RayCluster created -> {RAY_NODES} nodes in `ray status`",
                (now - created).total_seconds())  # fmt: skip


def _job_finished(cluster: LocalCluster, started: float) -> Callable[[], dict[str, Any] | None]:
    """The RayJob's status once it is Complete (a Failed one raises), saying each state
    it passes through."""
    seen = [""]

    def finished() -> dict[str, Any] | None:
        status: dict[str, Any] = cluster.get_json("rayjob/rayjob-local").get("status") or {}
        state = f"{status.get('jobDeploymentStatus', '')}/{status.get('jobStatus', '')}"
        if state != seen[0]:
            _say(f"  {time.monotonic() - started:6.1f} s  {state}")
            seen[0] = state
        if status.get("jobDeploymentStatus") == "Failed":
            raise RuntimeError(f"the RayJob failed: {status.get('reason')}: "
                               f"{status.get('message')}")  # fmt: skip
        return status if status.get("jobDeploymentStatus") == "Complete" else None

    return finished


def _run_job(cluster: LocalCluster, timings: Timings) -> None:
    deadline = yaml.safe_load(JOB_SAMPLE.read_text())["spec"]["activeDeadlineSeconds"]
    started = time.monotonic()
    _show(cluster, "apply", "-f", str(JOB_SAMPLE.relative_to(REPO_ROOT)))
    # The operator fails the RayJob at its activeDeadlineSeconds; a minute more for it
    # to say so.
    status, _ = _wait("the RayJob to be Complete", _job_finished(cluster, started),
                      deadline + 60)  # fmt: skip
    timings.add("RayJob applied -> Complete", time.monotonic() - started)
    _show(cluster, "get", "rayjobs", "-o", "wide")
    _show(cluster, "logs", "job/rayjob-local")
    job_cluster = status["rayClusterName"]

    def deleted() -> bool | None:
        found = cluster.kubectl("get", "raycluster", job_cluster, "--ignore-not-found", "-o",
                                "name").stdout.strip()  # fmt: skip
        return None if found else True

    # shutdownAfterJobFinishes with ttlSecondsAfterFinished 0: the operator deletes it at
    # once, and the garbage collector its pods.
    _wait(f"its RayCluster {job_cluster} to be deleted", deleted, DELETE_SECONDS)
    _say(f"RayCluster {job_cluster} deleted; the RayJob keeps its status and its log")


def _tear_down(cluster: LocalCluster, stack: QuickstartStack, timings: Timings) -> None:
    started = time.monotonic()
    # While the operator still runs: it honours the RayJob's finalizer.
    _show(cluster, "delete", "rayjob", "rayjob-local", "--timeout=120s")
    stack.run("destroy", "--yes")
    _wait("every pod to be gone", lambda: cluster.get_json("pods", "-A")["items"] == [] or None,
          DELETE_SECONDS)  # fmt: skip
    _show(cluster, "get", "all", "-A")
    timings.add("teardown: the RayJob deleted, pulumi destroy, every pod gone",
                time.monotonic() - started)  # fmt: skip


def _diagnose(cluster: LocalCluster) -> None:
    """What a failed demo leaves to read: the pods and the operator's last words."""
    try:
        _show(cluster, "get", "pods", "-A", "-o", "wide")
        log = cluster.kubectl("-n", DEFAULT_NAMESPACE, "logs", OPERATOR_DEPLOYMENT,
                              "--tail=40", check=False)  # fmt: skip
        _say(f"\n--- the operator's log (last 40 lines) ---\n{log.stdout}{log.stderr}")
    except Exception as error:  # the demo's own failure is the one to report
        _say(f"(the cluster's state could not be read: {error})")


def main() -> int:
    sandbox.exit_unless_inside("the demo")
    began = time.monotonic()
    timings = Timings()
    with tempfile.TemporaryDirectory(prefix="pulumi-ray-demo-") as scratch:
        state_dir = Path(scratch)
        _say("starting a control plane and one real node (kubelet, containerd, runc, CNI, "
             "CoreDNS, kube-proxy), loading the operator's and the Ray images ...")  # fmt: skip
        cluster = start_real_node_cluster(state_dir / "cluster", OPERATOR_IMAGE,
                                          install_crds=False)  # fmt: skip
        try:
            timings.add("control plane and real node up", time.monotonic() - began)
            _show(cluster, "get", "nodes", "-o", "wide")
            stack = _quickstart_up(cluster, state_dir, timings)
            _cluster_ready(cluster, timings)
            _run_job(cluster, timings)
            _tear_down(cluster, stack, timings)
        except BaseException:
            _diagnose(cluster)
            raise
        finally:
            stopping = time.monotonic()
            cluster.stop()
            timings.add("node and control plane stopped", time.monotonic() - stopping)
    timings.add("the whole demo", time.monotonic() - began)
    _say(f"\ndemo finished; nothing runs any more.\n{timings.summary()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
