"""Ray on the real node, our operator beside KubeRay's: how long from ``kubectl apply`` of
a RayCluster (a head and two workers) to every pod Ready, and to three alive nodes in
``ray status``; and what the node and the Ray pods hold in memory meanwhile.

    make node image ray-image redis-image kuberay   # what the node tier loads
    .venv/bin/python -m hack.sandbox -- .venv/bin/python -m benchmarks.real_node [--runs 3]

One control plane with one real node (``tests/node/harness.py``, as the node tier starts
it) serves every run. Each run deploys one operator as a real pod in a fresh namespace,
applies the RayCluster, takes both times by polling (every 0.5 s, so each is good to
about half a second), reads memory, deletes the namespace and waits for its pods to go.
The operators take turns, so a drift of the machine's load falls on both alike.

Memory: each pod's working set as the kubelet's summary API reports it (cAdvisor, from
the pod's cgroup), and the resident set of the node's own processes (kubelet,
containerd and its shims, kube-proxy, CoreDNS), read from ``/proc`` for the processes
in the node's PID namespace outside any pod.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass
from pathlib import Path

from hack import kuberay, processes, sandbox
from hack.localcluster import LocalCluster
from hack.node.node import NODE_NAME
from hack.raystatus import ray_status
from tests.kubeclient import fresh_namespace
from tests.node.harness import (
    Deployed,
    all_ready,
    cluster_spec,
    deploy_kuberay,
    deploy_operator,
    pods,
    start_real_node_cluster,
)
from tests.waiting import wait_for

READY_SECONDS = 420.0
NODES_SECONDS = 180.0
NODE_PROCESSES = ("kubelet", "containerd", "containerd-shim", "kube-proxy", "coredns")
"""Command names (``/proc/PID/comm``, 15 characters at most) of the node's own processes."""

Deploy = Callable[[LocalCluster, str, Path], AbstractContextManager[Deployed]]
KUBERAY = f"kuberay-{kuberay.VERSION}"
OPERATORS: dict[str, Deploy] = {"ours": deploy_operator, KUBERAY: deploy_kuberay}


@dataclass(frozen=True)
class Run:
    operator: str
    pods_ready_s: float
    three_nodes_s: float
    ray_pods_mib: float
    operator_pod_mib: float
    node_processes_mib: float


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def node_processes_mib(cluster: LocalCluster) -> float:
    """The resident set of the node's own processes: those in its init's PID namespace
    (containers have PID namespaces of their own)."""
    node = cluster.real_node
    assert node is not None
    namespace = os.readlink(f"/proc/{node.init_pid}/ns/pid")
    total = 0
    for pid in processes.pids():
        try:
            if os.readlink(f"/proc/{pid}/ns/pid") != namespace:
                continue
            command = Path(f"/proc/{pid}/comm").read_text().strip()
            if command.startswith(NODE_PROCESSES):
                total += _rss_kib(pid)
        except OSError:
            continue  # gone meanwhile
    return total / 1024


def pod_memory_mib(cluster: LocalCluster, namespace: str) -> dict[str, float]:
    """Each pod of ``namespace`` by name: its working set, from the kubelet."""
    summary = json.loads(cluster.kubectl(
        "get", "--raw", f"/api/v1/nodes/{NODE_NAME}/proxy/stats/summary").stdout)  # fmt: skip
    return {
        pod["podRef"]["name"]: pod.get("memory", {}).get("workingSetBytes", 0) / 2**20
        for pod in summary.get("pods", [])
        if pod["podRef"]["namespace"] == namespace
    }


def one_run(cluster: LocalCluster, operator: str, work_dir: Path) -> Run:
    with (
        fresh_namespace(cluster, prefix="bench") as ns,
        OPERATORS[operator](cluster, ns, work_dir) as deployed,
    ):
        manifest = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "spec": cluster_spec(2),
                    "metadata": {"name": "three", "namespace": ns}}  # fmt: skip
        started = time.monotonic()
        cluster.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(manifest))
        wait_for("the head and two workers Ready",
                 lambda: all_ready(pods(cluster, ns, "ray.io/cluster=three"), 3),
                 timeout=READY_SECONDS, interval=0.5)  # fmt: skip
        ready = time.monotonic() - started
        (head,) = pods(cluster, ns, "ray.io/cluster=three,ray.io/node-type=head")
        wait_for("three alive nodes in ray status",
                 lambda: ray_status(cluster, ns, head["metadata"]["name"],
                                    head["spec"]["containers"][0]["name"]).alive == 3,
                 timeout=NODES_SECONDS, interval=0.5)  # fmt: skip
        nodes = time.monotonic() - started
        time.sleep(5)  # the dashboard and agents settle after the last join
        memory = pod_memory_mib(cluster, ns)
        operator_name = deployed.pod["metadata"]["name"]
        return Run(
            operator=operator,
            pods_ready_s=round(ready, 1),
            three_nodes_s=round(nodes, 1),
            ray_pods_mib=round(sum(v for k, v in memory.items() if k.startswith("three-")), 1),
            operator_pod_mib=round(memory.get(operator_name, 0.0), 1),
            node_processes_mib=round(node_processes_mib(cluster), 1),
        )


def runs(cluster: LocalCluster, count: int, work_dir: Path) -> Iterator[Run]:
    for index in range(count):
        for operator in OPERATORS:
            run_dir = work_dir / f"{operator}-{index}"
            run_dir.mkdir()
            print(f"run {index + 1}/{count}: {operator} ...", file=sys.stderr, flush=True)
            yield one_run(cluster, operator, run_dir)


def table(results: list[Run]) -> str:
    fields = ("pods_ready_s", "three_nodes_s", "ray_pods_mib", "operator_pod_mib",
              "node_processes_mib")  # fmt: skip
    lines = ["operator        | " + " | ".join(fields), "-" * 100]
    medians: dict[str, dict[str, float]] = {}
    for operator in OPERATORS:
        mine = [r for r in results if r.operator == operator]
        medians[operator] = {f: statistics.median(getattr(r, f) for r in mine) for f in fields}
        lines.append(f"{operator:<15} | " + " | ".join(
            f"{medians[operator][f]:>{len(f)}.1f}" for f in fields))  # fmt: skip
    ours, theirs = medians["ours"], medians[KUBERAY]
    ratios = [ours[f] / theirs[f] if theirs[f] else float("nan") for f in fields]
    lines.append(f"{'ratio':<15} | " + " | ".join(
        f"{ratio:>{len(f)}.2f}" for f, ratio in zip(fields, ratios, strict=True)))  # fmt: skip
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per operator")
    parser.add_argument("--json", type=Path, help="also write every run here")
    arguments = parser.parse_args()
    sandbox.exit_unless_inside("the real-node benchmark")
    state = Path(tempfile.mkdtemp(prefix="bench-real-node-"))
    try:
        with start_real_node_cluster(state, with_kuberay=True) as cluster:
            results = list(runs(cluster, arguments.runs, state))
    finally:
        shutil.rmtree(state, ignore_errors=True)
    print(f"medians of {arguments.runs} runs each (times from kubectl apply):")
    print(table(results))
    if arguments.json:
        arguments.json.write_text(json.dumps([asdict(r) for r in results], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
