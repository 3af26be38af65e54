"""The local control plane behaves like a real cluster where our operator needs it to:
pods schedule onto kwok nodes and become Ready, the garbage collector follows owner
references, and Job pods complete."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from hack.gobuild import LESS_GC_ENV, ONE_PROC_ENV
from hack.localcluster import TEST_GO_RUNTIME, LocalCluster
from hack.localcluster.client import make_transport
from tests.kubeclient import LOG_UNSCHEDULED, pod_log
from tests.waiting import wait_for

REPO_ROOT = Path(__file__).resolve().parents[2]


def _apply(cluster: LocalCluster, namespace: str, manifest: dict[str, Any]) -> None:
    cluster.kubectl("-n", namespace, "apply", "-f", "-", input=json.dumps(manifest))


def test_nodes_are_fake_ready_and_offer_gpus(local_cluster: LocalCluster) -> None:
    nodes = local_cluster.get_json("nodes")["items"]
    assert len(nodes) == 4
    gpu_capacity = [node["status"]["capacity"].get("nvidia.com/gpu") for node in nodes]
    assert gpu_capacity.count("8") == 2
    for node in nodes:
        ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
        assert ready and ready[0]["status"] == "True", node["metadata"]["name"]


def test_pod_is_scheduled_onto_a_kwok_node_and_becomes_ready(
    local_cluster: LocalCluster, namespace: str
) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "sleeper"},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "resources": {
                        "requests": {"cpu": "1", "nvidia.com/gpu": "1"},
                        "limits": {"nvidia.com/gpu": "1"},
                    },
                }
            ]
        },
    }
    _apply(local_cluster, namespace, pod)
    local_cluster.kubectl(
        "-n", namespace, "wait", "--for=condition=Ready", "pod/sleeper", "--timeout=60s"
    )
    status = local_cluster.get_json("-n", namespace, "pod", "sleeper")
    assert status["status"]["phase"] == "Running"
    assert status["spec"]["nodeName"].startswith("kwok-node-")
    assert status["status"]["podIP"].startswith("10.244.")
    node = local_cluster.get_json("node", status["spec"]["nodeName"])
    assert "nvidia.com/gpu" in node["status"]["capacity"], "a GPU pod landed on a CPU node"


def test_the_log_of_a_pod_on_no_node_is_not_yet_there(
    local_cluster: LocalCluster, namespace: str
) -> None:
    """The API server answers 204 with no body for the log of a pod the scheduler has not
    bound (no node to ask): ``pod_log`` reads that as not started, as a test polling a
    pod it just made on a loaded machine must."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "nowhere"},
        "spec": {
            "nodeSelector": {"example.com/no-such-node": "true"},
            "containers": [{"name": "c", "image": "busybox"}],
        },
    }
    _apply(local_cluster, namespace, pod)
    transport = make_transport(local_cluster)
    response = transport.request(
        "GET", f"/api/v1/namespaces/{namespace}/pods/nowhere/log",
        query=[], body=None, headers={}, timeout=(5.0, 30.0),
    )  # fmt: skip
    assert (response.status, response.body) == (LOG_UNSCHEDULED, b"")
    assert pod_log(local_cluster, namespace, "nowhere") is None


def test_garbage_collector_deletes_dependents_of_a_deleted_owner(
    local_cluster: LocalCluster, namespace: str
) -> None:
    _apply(
        local_cluster,
        namespace,
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner"}, "data": {}},
    )
    owner = local_cluster.get_json("-n", namespace, "configmap", "owner")
    reference = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "owner",
        "uid": owner["metadata"]["uid"],
        "controller": True,
    }
    _apply(
        local_cluster,
        namespace,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "dependent", "ownerReferences": [reference]},
        },
    )
    local_cluster.kubectl("-n", namespace, "delete", "configmap", "owner")

    def dependent_gone() -> bool:
        found = local_cluster.kubectl("-n", namespace, "get", "configmap", "dependent", check=False)
        return found.returncode != 0 and "NotFound" in found.stderr

    wait_for("the garbage collector to delete the dependent ConfigMap", dependent_gone, 60, 0.2)


def test_job_pod_completes_and_job_becomes_complete(
    local_cluster: LocalCluster, namespace: str
) -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "once"},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "busybox", "command": ["true"]}],
                }
            },
        },
    }
    _apply(local_cluster, namespace, job)
    local_cluster.kubectl(
        "-n", namespace, "wait", "--for=condition=Complete", "job/once", "--timeout=90s"
    )
    pods = local_cluster.get_json("-n", namespace, "pods", "-l", "job-name=once")["items"]
    assert [pod["status"]["phase"] for pod in pods] == ["Succeeded"]


def test_cli_up_status_down_leaves_no_process_behind(tmp_path: Path) -> None:
    state_dir = tmp_path / "cli"
    command = [sys.executable, "-m", "hack.localcluster"]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*command, *args, "--state-dir", str(state_dir), "--nodes", "1"],
            capture_output=True,
            text=True,
            env=env,
            cwd=REPO_ROOT,
            timeout=300,
        )

    up = run("up")
    try:
        assert up.returncode == 0, up.stderr
        assert "export KUBECONFIG=" in up.stdout
        status = run("status")
        assert status.returncode == 0, status.stdout + status.stderr
        assert status.stdout.count("running") == 5
        pids = json.loads((state_dir / "state.json").read_text())["pids"]
        assert sorted(pids) == sorted(
            ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"]
        )
    finally:
        down = run("down")
    assert down.returncode == 0, down.stderr
    for name, pid in pids.items():
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        stat = Path(f"/proc/{pid}/stat").read_text()
        assert stat.split(") ", 1)[1][0] == "Z", f"{name} (pid {pid}) still running after down"
        os.kill(pid, signal.SIGKILL)
    assert run("status").returncode == 1


def test_the_sessions_components_run_with_the_go_runtime_named_for_them(
    local_cluster: LocalCluster,
) -> None:
    """``TEST_GO_RUNTIME`` reaches each component as it names it: one thread of Go code for
    every one, less GC for the API server alone (the others see what this process sees)."""
    keys = {key for settings in TEST_GO_RUNTIME.values() for key in settings}
    assert keys == {*LESS_GC_ENV, *ONE_PROC_ENV}
    for component, pid in local_cluster.pids.items():
        environ = dict(
            entry.split("=", 1)
            for entry in Path(f"/proc/{pid}/environ").read_text().split("\0")
            if "=" in entry
        )
        wanted = TEST_GO_RUNTIME.get(component, {})
        assert {key: environ.get(key) for key in keys} == {
            key: wanted.get(key, os.environ.get(key)) for key in keys
        }, component
        assert environ.get("GOMAXPROCS") == "1", component
