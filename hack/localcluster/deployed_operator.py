"""The operator a RayOperator component deployed, run locally as its pod would run it.

kwok pods run no containers, so the e2e tests and benchmarks start the Deployment's own command and
arguments as a local process, authenticated with a token of the ServiceAccount the
component created: every request it makes goes through the RBAC the component rendered,
and a missing permission fails the test instead of being covered by an admin identity.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hack import processes
from hack.localcluster import LocalCluster
from hack.localcluster.client import make_client
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.errors import ApiError
from operator_runtime.runtime.kinds import ResourceKind

DEPLOYMENT = ResourceKind("apps/v1", "Deployment", "deployments", namespaced=True)

NEVER_PULLED_IMAGE = "registry.invalid/pulumi-ray/operator@sha256:" + "0" * 64
"""The ``image`` the tests and benchmarks give RayOperator, whose pods never run (kwok, or
mocks): a well-formed reference under ``.invalid``, a name that never resolves (RFC 2606),
so nothing can ever be pulled from it."""

BIND_FLAGS = ("--metrics-addr", "--health-probe-bind-address")
"""Flags whose in-pod values (all interfaces, fixed ports) are rebound to free local ports."""


def service_account_kubeconfig(
    cluster: LocalCluster, namespace: str, service_account: str, path: Path
) -> Path:
    """A kubeconfig that authenticates as ``namespace/service_account`` with a bound token."""
    token = cluster.kubectl(
        "-n", namespace, "create", "token", service_account, "--duration=2h"
    ).stdout.strip()
    return cluster.write_kubeconfig(path, service_account, {"token": token})


def literal_env(container: dict[str, Any]) -> dict[str, str]:
    """The container's env entries with literal values (``valueFrom`` needs a kubelet)."""
    return {e["name"]: str(e["value"]) for e in container.get("env", []) if "value" in e}


def deployment_container(cluster: LocalCluster, namespace: str, name: str) -> dict[str, Any]:
    deployment = cluster.get_json("-n", namespace, "deployment", name)
    container: dict[str, Any] = deployment["spec"]["template"]["spec"]["containers"][0]
    return container


def local_arguments(in_pod: list[str], *, kubeconfig: Path, lease_namespace: str) -> list[str]:
    """The Deployment's arguments with what differs outside a pod: where to listen, the
    credentials, and the Lease's namespace (a pod reads it from its mounted token)."""
    kept = [arg for arg in in_pod if arg.split("=", 1)[0] not in BIND_FLAGS]
    return [
        *kept,
        *(f"{flag}=127.0.0.1:0" for flag in BIND_FLAGS),
        f"--kubeconfig={kubeconfig}",
        f"--leader-election-namespace={lease_namespace}",
    ]


@dataclass
class OperatorAsServiceAccount:
    """Waits in the background until the component's Deployment and RBAC exist, then runs
    the Deployment's operator command locally under the ServiceAccount's token."""

    cluster: LocalCluster
    namespace: str
    deployment: str
    service_account: str
    work_dir: Path
    timeout: float = 600.0
    process: subprocess.Popen[bytes] | None = None
    error: BaseException | None = None
    command: list[str] = field(default_factory=list)
    _thread: threading.Thread | None = None
    _stopped: threading.Event = field(default_factory=threading.Event)
    """Set by ``stop`` once the operator is stopped: the thread that started it waits for
    it, since the operator dies with that thread (``Spec.die_with_parent``)."""

    @property
    def log_path(self) -> Path:
        return self.work_dir / "operator.log"

    def start_when_deployed(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _can_reconcile(self) -> bool:
        subject = f"system:serviceaccount:{self.namespace}:{self.service_account}"
        result = self.cluster.kubectl(
            "auth", "can-i", "watch", "rayclusters.ray.io", "--all-namespaces", f"--as={subject}",
            check=False,
        )  # fmt: skip
        namespaced = self.cluster.kubectl(
            "auth", "can-i", "create", "pods", "-n", self.namespace, f"--as={subject}",
            check=False,
        )  # fmt: skip
        return "yes" in result.stdout or "yes" in namespaced.stdout

    def _deployed(self, client: KubeClient) -> bool:
        """The Deployment exists (a request, polled) and its RBAC lets it reconcile (two
        ``kubectl auth can-i``, asked only then)."""
        try:
            found = client.find(DEPLOYMENT, self.deployment, self.namespace)
        except ApiError:
            return False
        return found is not None and self._can_reconcile()

    def _run(self) -> None:
        try:
            deadline = time.monotonic() + self.timeout
            client = make_client(self.cluster)
            while not self._deployed(client):
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"Deployment {self.namespace}/{self.deployment} and its RBAC never "
                        f"appeared within {self.timeout:.0f}s"
                    )
                time.sleep(0.5)
            container = deployment_container(self.cluster, self.namespace, self.deployment)
            kubeconfig = service_account_kubeconfig(
                self.cluster, self.namespace, self.service_account, self.work_dir / "sa.kubeconfig"
            )
            arguments = local_arguments(
                list(container.get("args", [])), kubeconfig=kubeconfig,
                lease_namespace=self.namespace,
            )  # fmt: skip
            # The image's entry point is `python -m operator_runtime` (a test pins the
            # image's entrypoint to the component's command); here it is this interpreter's.
            self.command = [sys.executable, "-m", "operator_runtime", *arguments]
            spec = processes.Spec(
                name="operator", argv=self.command, log=self.log_path,
                env={**os.environ, **literal_env(container)}, grace=40,
            )  # fmt: skip
            self.process = processes.launch(spec).process
        except BaseException as error:
            self.error = error
            return
        self._stopped.wait()

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def forbidden_requests(self) -> list[str]:
        """Log lines where the API server refused the operator: RBAC the component did
        not grant (the server says ``... is forbidden: User "system:serviceaccount:..."``)."""
        return [line for line in self.log_text().splitlines() if "forbidden" in line.lower()]

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self) -> None:
        """SIGTERM first, so the operator releases its Lease within its grace; only then
        may the starting thread end (its end would SIGKILL the operator)."""
        if self._thread is not None and self.process is None:
            self._thread.join(timeout=5)  # still starting: a moment to finish
        if self.process is not None:
            processes.stop(self.process, grace=40)
        self._stopped.set()
