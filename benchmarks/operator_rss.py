"""Benchmark: resident memory of the operator process with 10,000 pods in its cache.

Starts a local control plane (hack/localcluster), creates N pods (Ray-like: labels,
env, probes, resources) bound to kwok fake nodes, runs ``python -m operator_runtime``
with a controller that caches every ``ray.io/cluster`` pod, and reports VmRSS before
and after the cache is full, for the default projection and for a slim one.

    .venv/bin/python -m benchmarks.operator_rss [--pods 10000]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from hack.localcluster import LocalCluster, nodes, start_for_tests
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.kinds import POD
from operator_runtime.runtime.ratelimit import TokenBucket
from operator_runtime.runtime.transport import UrllibTransport, load_configuration

REPO_ROOT = Path(__file__).resolve().parents[1]
NAMESPACE = "rss-bench"
PODS_PER_NODE = 1000


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


def rss_kib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    match = re.search(r"VmRSS:\s+(\d+) kB", status)
    assert match, status
    return int(match.group(1))


def scrape(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return response.status, response.read().decode()
    except OSError:
        return 0, ""


def cached_pods(port: int) -> int:
    _, text = scrape(port, "/metrics")
    match = re.search(r'^informer_cached_objects\{kind="Pod"\} (\S+)$', text, re.M)
    return int(float(match.group(1))) if match else -1


def measure(cluster: LocalCluster, plugin: str, pods: int, port: int) -> dict[str, float]:
    health = port + 1
    process = subprocess.Popen(
        [sys.executable, "-m", "operator_runtime", f"--kubeconfig={cluster.kubeconfig}",
         f"--watch-namespace={NAMESPACE}", "--enable-leader-election=false",
         f"--controller-plugin={plugin}", "--controllers=pod-cache",
         f"--metrics-addr=127.0.0.1:{port}",
         f"--health-probe-bind-address=127.0.0.1:{health}", "--log-level=warning"],
        cwd=REPO_ROOT, env={**cluster.env, "PYTHONPATH": str(REPO_ROOT)},
    )  # fmt: skip
    try:
        started = time.monotonic()
        while scrape(health, "/readyz")[0] != 200:
            time.sleep(0.1)
        while cached_pods(port) < pods:
            time.sleep(0.2)
        synced = time.monotonic() - started
        time.sleep(5)  # let the initial reconcile wave settle
        return {"rss_mib": rss_kib(process.pid) / 1024, "sync_seconds": synced}
    finally:
        process.terminate()
        process.wait(60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as state:
        cluster = start_for_tests(Path(state))
        try:
            node_count = -(-args.pods // PODS_PER_NODE)
            nodes.create(cluster, count=node_count, gpu_nodes=0, prefix="bench-node")
            cluster.kubectl("create", "namespace", NAMESPACE)
            while cluster.kubectl("-n", NAMESPACE, "get", "sa", "default", check=False).returncode:
                time.sleep(0.2)
            baseline = measure(cluster, "benchmarks.pod_cache_plugin:register", 0, 18080)
            client = KubeClient(
                UrllibTransport(load_configuration(str(cluster.kubeconfig))),
                limiter=TokenBucket(0, 1),
            )
            started = time.monotonic()

            def create(index: int) -> None:
                client.create(pod_manifest(index, f"bench-node-{index % node_count}"))

            with ThreadPoolExecutor(16) as pool:
                list(pool.map(create, range(args.pods)))
            created = time.monotonic() - started
            default = measure(cluster, "benchmarks.pod_cache_plugin:register", args.pods, 18090)
            slim = measure(cluster, "benchmarks.pod_cache_plugin:register_slim", args.pods, 18100)
            sample = client.get(POD, pod_manifest(0, "")["metadata"]["name"], NAMESPACE)
            report = {
                "pods": args.pods,
                "pod_json_bytes": len(json.dumps(sample)),
                "create_seconds": round(created, 1),
                "rss_mib_no_pods": round(baseline["rss_mib"], 1),
                "rss_mib_default_projection": round(default["rss_mib"], 1),
                "rss_mib_slim_projection": round(slim["rss_mib"], 1),
                "sync_seconds_default": round(default["sync_seconds"], 1),
                "sync_seconds_slim": round(slim["sync_seconds"], 1),
            }
            print(json.dumps(report, indent=2))
        finally:
            cluster.stop()


if __name__ == "__main__":
    main()
