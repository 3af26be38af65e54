"""Install cert-manager's CRDs on a control plane and run its controller beside it.

The controller (``hack/certmanager``) runs as a process on this machine with the
control plane's kubeconfig, as Kueue and the gang schedulers do in the batch tests; it
watches every namespace. Ready means its informers have synced (its ``/readyz``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import yaml

from hack import certmanager, processes
from hack.localcluster import LocalCluster
from hack.localcluster.cluster import free_ports

CONTROLLER: Final = "cert-manager-controller"
"""Its name among the harness's processes."""


def crd_names(built_crds: str) -> list[str]:
    return [doc["metadata"]["name"] for doc in yaml.safe_load_all(built_crds) if doc]


def install(cluster: LocalCluster) -> None:
    """The cert-manager.io CRDs, established (idempotent)."""
    built = certmanager.ensure_built()
    crds = built.path(certmanager.CRDS_FILE)
    cluster.apply_crds(crds)
    cluster.wait_for_crds(*crd_names(crds.read_text()))


@dataclass(frozen=True)
class CertManager:
    """A running controller (``start``)."""

    log: Path
    supervisor: processes.Supervisor
    readyz_port: int

    def ready(self) -> bool:
        controller = self.supervisor.running.get(CONTROLLER)
        return controller is not None and controller.alive() and _ready(self.readyz_port)

    def stop(self) -> None:
        self.supervisor.stop_all()


def _ready(port: int) -> bool:
    return processes.http_ok(f"http://127.0.0.1:{port}/readyz")


def start(cluster: LocalCluster, state_dir: Path, *, timeout: float = 60) -> CertManager:
    """Install the CRDs and start the controller; ``CertManager.stop`` stops it (the CRDs
    stay: other tests' objects may still use them)."""
    install(cluster)
    built = certmanager.ensure_built()
    (readyz_port,) = free_ports(1)
    state_dir.mkdir(parents=True, exist_ok=True)
    log_path = state_dir / "cert-manager.log"
    supervisor = processes.Supervisor("cert-manager")
    try:
        supervisor.start(
            processes.Spec(
                name=CONTROLLER,
                argv=[str(built.path(certmanager.BINARY)), f"--kubeconfig={cluster.kubeconfig}",
                      f"--readyz-address=127.0.0.1:{readyz_port}", "--v=2"],
                log=log_path,
                env=dict(os.environ),
                ready=lambda: _ready(readyz_port),
                ready_timeout=timeout,
                grace=10,
            )
        )  # fmt: skip
    except BaseException:
        supervisor.stop_all()
        raise
    return CertManager(log_path, supervisor, readyz_port)


@contextlib.contextmanager
def running(
    cluster: LocalCluster, state_dir: Path, *, timeout: float = 60
) -> Iterator[CertManager]:
    """The controller running until the block ends."""
    manager = start(cluster, state_dir, timeout=timeout)
    try:
        yield manager
    finally:
        manager.stop()
