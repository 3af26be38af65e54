"""Install Kueue on the local control plane and run its controller manager beside it.

What a release's kustomization does in a cluster, done here for a process on this
machine:

- the CRDs, with the conversion webhook the release patches into five of them;
- namespace ``kueue-system``, the empty Secret its certificate manager fills, and the
  Service its webhooks are reached through;
- the admission webhooks, only those of Kueue's own API and of ``ray.io`` (the release
  registers every framework's, pods and Jobs included, and those would hold up other
  tests' pods whenever Kueue is down), each limited to namespaces labelled
  ``NAMESPACE_LABEL`` so that a test session's other namespaces never depend on Kueue.

TLS is Kueue's own internal certificate management, as in a release: it generates a CA
and a serving certificate for ``kueue-webhook-service.kueue-system.svc``, keeps them in
the Secret and writes the CA into the webhook configurations and the CRDs. In a pod the
kubelet mounts that Secret at the webhook's certificate directory, and Kueue waits for
the files to appear there; here ``SecretFiles`` plays the kubelet's part. The API server
resolves the Service to its cluster IP (its default, no endpoints needed); the sandbox
routes the service range to loopback, so the call reaches Kueue's webhook server, which
listens on all addresses at the Service's own port.
"""

from __future__ import annotations

import base64
import contextlib
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from hack import gobuild, kueue, processes, sandbox
from hack.localcluster import LocalCluster
from hack.localcluster.client import make_client
from hack.localcluster.cluster import free_ports
from operator_runtime.runtime.errors import ApiError
from operator_runtime.runtime.kinds import SECRET as SECRET_KIND

NAMESPACE: Final = "kueue-system"
SERVICE: Final = "kueue-webhook-service"
SECRET: Final = "kueue-webhook-server-cert"
NAMESPACE_LABEL: Final = "pulumi-ray.test/kueue"
"""Kueue's webhooks and its job controllers act only in namespaces with this label
(value ``enabled``)."""
FRAMEWORKS: Final = ("ray.io/rayjob", "ray.io/raycluster", "ray.io/rayservice")
WEBHOOK_GROUPS: Final = frozenset({"kueue.x-k8s.io", "ray.io"})
CONVERTED_CRDS: Final = frozenset(
    f"{plural}.kueue.x-k8s.io"
    for plural in ("localqueues", "clusterqueues", "cohorts", "workloads", "multikueueclusters")
)
"""The CRDs the release serves through Kueue's conversion webhook (its CRD kustomization's
``webhook_in_*`` patches); its certificate manager waits to inject the CA into each."""
MANAGER: Final = "kueue-controller-manager"
"""Its controller manager's name among the harness's processes."""
QUEUE_NAME_LABEL: Final = "kueue.x-k8s.io/queue-name"


def _namespace_selector() -> dict[str, Any]:
    return {"matchLabels": {NAMESPACE_LABEL: "enabled"}}


def _service_reference(port: int, path: str) -> dict[str, Any]:
    return {"service": {"name": SERVICE, "namespace": NAMESPACE, "path": path, "port": port}}


def crd_manifests(text: str, *, webhook_port: int) -> list[dict[str, Any]]:
    """The release's CRDs, the ``CONVERTED_CRDS`` with their conversion webhook."""
    crds = [doc for doc in yaml.safe_load_all(text) if doc]
    for crd in crds:
        if crd["metadata"]["name"] in CONVERTED_CRDS:
            crd["spec"]["conversion"] = {
                "strategy": "Webhook",
                "webhook": {
                    "clientConfig": _service_reference(webhook_port, "/convert"),
                    "conversionReviewVersions": ["v1"],
                },
            }
    return crds


def webhook_manifests(text: str, *, webhook_port: int) -> list[dict[str, Any]]:
    """The release's webhook configurations, cut down to ``WEBHOOK_GROUPS`` and to
    namespaces labelled ``NAMESPACE_LABEL``, named as the release names them (Kueue's
    certificate manager finds them by those names)."""
    configurations = []
    for doc in yaml.safe_load_all(text):
        if not doc:
            continue
        kind = "validating" if doc["kind"].startswith("Validating") else "mutating"
        doc["metadata"] = {"name": f"kueue-{kind}-webhook-configuration"}
        kept = []
        for hook in doc["webhooks"]:
            groups = {group for rule in hook["rules"] for group in rule["apiGroups"]}
            if not groups <= WEBHOOK_GROUPS:
                continue
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = _service_reference(webhook_port, path)
            if "ray.io" in groups:
                hook["namespaceSelector"] = _namespace_selector()
            kept.append(hook)
        doc["webhooks"] = kept
        configurations.append(doc)
    return configurations


def support_manifests(*, webhook_port: int) -> list[dict[str, Any]]:
    """Namespace, Secret and Service: what the certificate manager and the API server
    need before Kueue starts."""
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": SECRET, "namespace": NAMESPACE},
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": SERVICE, "namespace": NAMESPACE},
            "spec": {
                "type": "ClusterIP",
                "ports": [{"port": webhook_port, "targetPort": webhook_port, "protocol": "TCP"}],
            },
        },
    ]


def configuration(*, webhook_port: int, health_port: int, cert_dir: Path) -> dict[str, Any]:
    """Kueue's configuration file: the Ray integrations only, no leader election, no
    metrics server, and the job controllers limited to ``NAMESPACE_LABEL``."""
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": NAMESPACE,
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        "metrics": {"bindAddress": "0"},
        "webhook": {"port": webhook_port, "certDir": str(cert_dir)},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {
            "enable": True,
            "webhookServiceName": SERVICE,
            "webhookSecretName": SECRET,
        },
        "managedJobsNamespaceSelector": _namespace_selector(),
        "integrations": {"frameworks": list(FRAMEWORKS)},
        "featureGates": {"VisibilityOnDemand": False},
    }


def _apply(cluster: LocalCluster, documents: list[dict[str, Any]]) -> None:
    cluster.apply(input=yaml.safe_dump_all(documents))


def install(cluster: LocalCluster, built: gobuild.Built, *, webhook_port: int) -> list[str]:
    """CRDs, namespace, Secret, Service and webhook configurations (idempotent); returns
    the webhook configurations as ``kind/name``, for ``uninstall_webhooks``."""
    crds = crd_manifests(built.path(kueue.CRDS_FILE).read_text(), webhook_port=webhook_port)
    _apply(cluster, crds)
    _apply(cluster, support_manifests(webhook_port=webhook_port))
    hooks_file = built.path(kueue.WEBHOOKS_FILE).read_text()
    hooks = webhook_manifests(hooks_file, webhook_port=webhook_port)
    _apply(cluster, hooks)
    cluster.wait_for_crds(*[doc["metadata"]["name"] for doc in crds])
    return [f"{doc['kind'].lower()}/{doc['metadata']['name']}" for doc in hooks]


def uninstall_webhooks(cluster: LocalCluster, webhooks: list[str]) -> None:
    """Take Kueue's webhook configurations away. Left behind with no Kueue to answer,
    they fail every write the API server sends them (a RayService in a labelled
    namespace could no longer get its finalizer from an operator started later on the
    same control plane: "failed calling webhook ... connection refused")."""
    if webhooks:
        cluster.kubectl("delete", "--ignore-not-found", "--wait=false", *webhooks)


class SecretFiles:
    """Keeps ``directory`` holding the Secret's keys as files, as the kubelet does for a
    Secret volume: polled, written when the data changes, until ``stop``."""

    def __init__(self, cluster: LocalCluster, directory: Path) -> None:
        self._client, self._directory = make_client(cluster), directory
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._written: dict[str, str] = {}

    def start(self) -> None:
        self._directory.mkdir(parents=True, exist_ok=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.wait(2.0 if self._written else 0.3):
            try:
                data: dict[str, str] = (
                    self._client.get(SECRET_KIND, SECRET, NAMESPACE).get("data") or {}
                )
            except ApiError:
                continue
            if not data or data == self._written:
                continue
            for key, value in data.items():
                staging = self._directory / f".{key}.tmp"
                staging.write_bytes(base64.b64decode(value))
                staging.replace(self._directory / key)
            self._written = data


@dataclass(frozen=True)
class Kueue:
    """A running controller manager and what it installed (``start``)."""

    log: Path
    supervisor: processes.Supervisor
    """Its one member, the controller manager."""
    health_port: int
    cluster: LocalCluster
    webhooks: list[str]
    secret_files: SecretFiles

    def ready(self) -> bool:
        """Still running and ready: its webhook server serves."""
        manager = self.supervisor.running.get(MANAGER)  # None once stopped
        return manager is not None and manager.alive() and _ready(self.health_port)

    def stop(self) -> None:
        """Uninstall the webhooks, then stop the manager: webhooks left installed with
        nothing answering would refuse every later write to a labelled namespace."""
        _stop(self.cluster, self.webhooks, self.secret_files, self.supervisor)


def _ready(health_port: int) -> bool:
    return processes.http_ok(f"http://127.0.0.1:{health_port}/readyz")


def _stop(
    cluster: LocalCluster,
    webhooks: list[str],
    secret_files: SecretFiles | None,
    supervisor: processes.Supervisor,
) -> None:
    # Kueue's own order, not the Supervisor's alone: its webhooks go before the manager
    # that answers them does.
    try:
        uninstall_webhooks(cluster, webhooks)
    finally:  # the manager stops even when the control plane is already gone
        if secret_files is not None:
            secret_files.stop()
        supervisor.stop_all()


def start(cluster: LocalCluster, state_dir: Path, *, timeout: float = 120) -> Kueue:
    """Install Kueue and start its controller manager; ``Kueue.stop`` undoes both.

    Ready means its webhook server serves with a CA the API server trusts: the
    certificate bootstrap finished before the manager started, so readiness (which
    waits for the webhook server) implies it.
    """
    sandbox.require_inside("Kueue against the local control plane")
    built = kueue.ensure_built()
    webhook_port, health_port = free_ports(2)
    state_dir.mkdir(parents=True, exist_ok=True)
    webhooks = install(cluster, built, webhook_port=webhook_port)
    # Everything after the install is inside the try: a start that fails uninstalls.
    secret_files: SecretFiles | None = None
    supervisor = processes.Supervisor("kueue")
    try:
        config_path = state_dir / "kueue-config.yaml"
        config = configuration(
            webhook_port=webhook_port, health_port=health_port, cert_dir=state_dir / "certs"
        )
        config_path.write_text(yaml.safe_dump(config))
        log_path = state_dir / "kueue.log"
        secret_files = SecretFiles(cluster, state_dir / "certs")
        secret_files.start()
        supervisor.start(
            processes.Spec(
                name=MANAGER,
                argv=[str(built.path(kueue.BINARY)), f"--config={config_path}",
                      "--zap-log-level=2"],
                log=log_path,
                env={**os.environ, "KUBECONFIG": str(cluster.kubeconfig)},
                ready=lambda: _ready(health_port),
                ready_timeout=timeout,
                grace=30,
            )
        )  # fmt: skip
    except BaseException:
        _stop(cluster, webhooks, secret_files, supervisor)
        raise
    return Kueue(log_path, supervisor, health_port, cluster, webhooks, secret_files)


@contextlib.contextmanager
def running(cluster: LocalCluster, state_dir: Path, *, timeout: float = 120) -> Iterator[Kueue]:
    """Kueue installed and its controller manager running until the block ends
    (``start``, ``Kueue.stop``)."""
    manager = start(cluster, state_dir, timeout=timeout)
    try:
        yield manager
    finally:
        manager.stop()
