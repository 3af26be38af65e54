"""A tenant with edit rights in one namespace, and the operator a ``RayOperator`` component
deploys, on the local control plane.

The component is rendered under Pulumi mocks (no engine): its ServiceAccount, ClusterRole,
bindings and the Deployment's container are exactly what ``pulumi up`` would send. The
RBAC objects are applied with kubectl; kwok runs no containers, so the Deployment's own
arguments run as a local process authenticated with a token of the component's
ServiceAccount, through a recording proxy that forwards that token (not an admin
certificate): every request the operator sends is authorized by the rendered RBAC and
recorded, so a test can say which namespaces it reached.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from components import RayOperator, RayOperatorArgs
from hack import processes
from hack.localcluster import LocalCluster
from hack.localcluster.deployed_operator import NEVER_PULLED_IMAGE, literal_env, local_arguments
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.ratelimit import TokenBucket
from operator_runtime.runtime.transport import UrllibTransport, load_configuration
from tests.components.workload_mocks import run
from tests.faultproxy import FaultProxy, Record

RBAC_KINDS: Final = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
TENANT_EXTRA_RULES: Final = [
    # The built-in `edit` role aggregates only rules labelled for it; neither our CRDs nor
    # the components ship such a ClusterRole, so a platform grants the Ray kinds (and the
    # Gateway API, for incremental upgrades) in a Role of the tenant's namespace.
    {"apiGroups": ["ray.io"],
     "resources": ["rayclusters", "rayjobs", "rayservices", "raycronjobs"],
     "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
    {"apiGroups": ["gateway.networking.k8s.io"], "resources": ["gateways", "httproutes"],
     "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
]  # fmt: skip


@dataclass(frozen=True)
class RenderedOperator:
    namespace: str
    service_account: str
    rbac: list[dict[str, Any]]
    """ServiceAccount, ClusterRole, bindings, Roles: as the component registers them."""
    container: dict[str, Any]
    """The Deployment's one container."""
    pod: dict[str, Any]
    """The Deployment's pod spec (grace period, ServiceAccount, volumes)."""
    deployment: dict[str, Any]
    """The Deployment itself, as registered."""

    @property
    def cluster_role(self) -> dict[str, Any]:
        (only,) = [m for m in self.rbac if m["kind"] == "ClusterRole"]
        return only


def render_operator(name: str, args: RayOperatorArgs | None = None) -> RenderedOperator:
    """The objects ``RayOperator(name, args)`` registers, in their manifest form."""
    chosen = dataclasses.replace(
        args or RayOperatorArgs(image=NEVER_PULLED_IMAGE), name=name, namespace=name,
        create_namespace=False,
        install_crds=False,
    )  # fmt: skip
    result = run(lambda: RayOperator(name, chosen))
    rbac = [r.inputs for r in result.registrations if r.inputs.get("kind") in RBAC_KINDS]
    (deployment,) = [r.inputs for r in result.registrations if r.inputs.get("kind") == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    (account,) = [m for m in rbac if m["kind"] == "ServiceAccount"]
    return RenderedOperator(
        name, account["metadata"]["name"], rbac, dict(container), dict(pod), dict(deployment)
    )


def apply(cluster: LocalCluster, manifests: list[dict[str, Any]], work_dir: Path) -> None:
    path = work_dir / "manifests.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": manifests}))
    cluster.apply(path)


def token_kubeconfig(
    cluster: LocalCluster, namespace: str, account: str, path: Path, server: str | None = None
) -> Path:
    """A kubeconfig authenticating as ``namespace/account`` (a bound token), to the API
    server or to ``server`` (a proxy that presents the same certificate)."""
    token = cluster.kubectl(
        "-n", namespace, "create", "token", account, "--duration=1h"
    ).stdout.strip()
    cluster.write_kubeconfig(path, account, {"token": token})
    if server is not None:
        config = json.loads(path.read_text())
        config["clusters"][0]["cluster"]["server"] = server
        path.write_text(json.dumps(config))
    return path


def client_for(kubeconfig: Path) -> KubeClient:
    return KubeClient(
        UrllibTransport(load_configuration(str(kubeconfig))), limiter=TokenBucket(100, 200)
    )


def make_tenant(cluster: LocalCluster, namespace: str, work_dir: Path) -> KubeClient:
    """A real ServiceAccount in ``namespace`` bound to the built-in ``edit`` ClusterRole
    and to a Role for the Ray kinds; the client that acts as it (never admin)."""
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "tenant-ray", "namespace": namespace}, "rules": TENANT_EXTRA_RULES,
    }  # fmt: skip

    def binding(name: str, kind: str) -> dict[str, Any]:
        return {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": f"tenant-{name}", "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": "tenant", "namespace": namespace}],
        }  # fmt: skip

    account = {"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": {"name": "tenant", "namespace": namespace}}  # fmt: skip
    apply(cluster, [account, role, binding("edit", "ClusterRole"),
                    binding("tenant-ray", "Role")], work_dir)  # fmt: skip
    return client_for(
        token_kubeconfig(cluster, namespace, "tenant", work_dir / "tenant.kubeconfig")
    )


class DeployedOperator:
    """The rendered Deployment's command as a local process under the rendered
    ServiceAccount, its every request recorded by ``proxy``."""

    def __init__(self, cluster: LocalCluster, rendered: RenderedOperator, work_dir: Path) -> None:
        self.proxy = FaultProxy(cluster, work_dir, client_identity=True)
        self.rendered = rendered
        self.cluster = cluster
        self.log_path = work_dir / "operator.log"
        self.work_dir = work_dir
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> DeployedOperator:
        self.proxy.__enter__()
        kubeconfig = token_kubeconfig(
            self.cluster, self.rendered.namespace, self.rendered.service_account,
            self.work_dir / "operator.kubeconfig", server=f"https://127.0.0.1:{self.proxy.port}",
        )  # fmt: skip
        arguments = local_arguments(
            list(self.rendered.container.get("args", [])),
            kubeconfig=kubeconfig, lease_namespace=self.rendered.namespace,
        )  # fmt: skip
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "operator_runtime", *arguments],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                env={**os.environ, **literal_env(self.rendered.container)},
            )  # fmt: skip
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            processes.stop(self.process, grace=40)
        self.proxy.__exit__(*exc)

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log().splitlines()[-lines:])

    def lines(self, containing: str, last: int = 3) -> list[str]:
        return [line for line in self.log().splitlines() if containing in line][-last:]

    def mark(self) -> int:
        """A point in the request log: ``since(mark)`` is what came after."""
        return len(self.proxy.log)

    def since(self, mark: int) -> list[Record]:
        return list(self.proxy.log[mark:])


def touches(record: Record, namespace: str) -> bool:
    path = record.request.path
    return f"/namespaces/{namespace}/" in path or path.endswith(f"/namespaces/{namespace}")


def describe(records: list[Record]) -> list[str]:
    return [f"{r.request.method} {r.request.path} -> {r.status}" for r in records]
