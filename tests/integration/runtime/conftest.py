"""Helpers for the runtime's integration tests: an in-process manager running the
``Copier`` test controller, and operator subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pytest
from prometheus_client import CollectorRegistry

from hack.localcluster import LocalCluster
from hack.localcluster.cluster import free_port
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.manager import Manager, ManagerOptions
from operator_runtime.runtime.metrics import RuntimeMetrics
from tests.integration.managers import manager_running
from tests.integration.runtime.copier import Copier
from tests.kubeclient import make_client

REPO_ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def client(local_cluster: LocalCluster) -> KubeClient:
    return make_client(local_cluster)


@dataclass
class RunningManager:
    manager: Manager
    copier: Copier
    stop: threading.Event
    thread: threading.Thread
    exit_codes: list[int]


@contextmanager
def running_manager(
    client: KubeClient, namespace: str, *, concurrency: int = 2,
    before_start: Callable[[Manager], None] | None = None,
) -> Iterator[RunningManager]:  # fmt: skip
    metrics = RuntimeMetrics(CollectorRegistry())
    client.set_observer(metrics.observe_request)
    options = ManagerOptions(
        namespaces=(namespace,),
        concurrency=concurrency,
        metrics_address="127.0.0.1:0",
        health_address="127.0.0.1:0",
    )
    manager = Manager(client, options, metrics=metrics)
    copier = Copier(manager.context())
    manager.add(copier)
    if before_start is not None:
        before_start(manager)
    with manager_running(manager, synced=False) as run:
        yield RunningManager(manager, copier, run.stop, run.thread, run.exit_codes)


def source_manifest(namespace: str, name: str, data: dict[str, str],
                    annotations: dict[str, str] | None = None) -> dict[str, Any]:  # fmt: skip
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace,
                         "labels": {"runtime-test/role": "source"},
                         "annotations": annotations or {}},
            "data": data}  # fmt: skip


@dataclass
class OperatorProcess:
    process: subprocess.Popen[str]
    log_path: Path
    metrics_port: int
    health_port: int
    log_handle: IO[str]

    def log_lines(self) -> list[dict[str, Any]]:
        lines = []
        for raw in self.log_path.read_text().splitlines():
            try:
                lines.append(json.loads(raw))
            except ValueError:
                lines.append({"msg": raw})
        return lines

    def identity(self) -> str:
        for line in self.log_lines():
            message = str(line.get("msg", ""))
            if message.startswith("ray-operator ") and " starting" in message:
                return message.split()[1]
        raise AssertionError(f"no start line in {self.log_path}")


@pytest.fixture
def start_operator(local_cluster: LocalCluster, tmp_path: Path) -> Iterator[
        Callable[..., OperatorProcess]]:  # fmt: skip
    started: list[OperatorProcess] = []

    def start(*extra: str, name: str = "op") -> OperatorProcess:
        metrics_port, health_port = free_port(), free_port()
        log_path = tmp_path / f"{name}-{len(started)}.log"
        handle = log_path.open("w")
        env = {**local_cluster.env, "PYTHONPATH": str(REPO_ROOT)}
        process = subprocess.Popen(
            [sys.executable, "-m", "operator_runtime", f"--kubeconfig={local_cluster.kubeconfig}",
             "--controller-plugin=tests.integration.runtime.copier:register",
             "--controllers=copier",
             f"--metrics-addr=127.0.0.1:{metrics_port}",
             f"--health-probe-bind-address=127.0.0.1:{health_port}", *extra],
            cwd=REPO_ROOT, env=env, stdout=handle, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        operator = OperatorProcess(process, log_path, metrics_port, health_port, handle)
        started.append(operator)
        return operator

    yield start
    for operator in started:
        if operator.process.poll() is None:
            operator.process.kill()
            operator.process.wait(10)
        operator.log_handle.close()
        # Shown by pytest only when the test failed: the operator's own account.
        tail = operator.log_path.read_text().splitlines()[-60:]
        print(f"--- {operator.log_path.name} (exit {operator.process.returncode}) ---")
        print("\n".join(tail))


def scrape(port: int, path: str = "/metrics") -> tuple[int, str]:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()
