"""The real-node tier: pods that run, on a kubelet with containerd and runc, beside a
control plane of its own (``hack/node``).

One control plane with one real node and no kwok node serves the whole tier (one
pytest-xdist worker runs it: ``tests/conftest.py`` ``GROUPS``), so every pod lands on the
real node. Images come from files (``hack/node/images.py``): the pause image built from
Kubernetes' ``pause.c``, and the operator's from ``make image``, whose Python the test
pods run.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from components import RayOperatorArgs
from hack import kuberay
from hack.image import built as operator_image
from hack.localcluster import LocalCluster
from hack.node import images
from hack.node.cluster import start_real_node_cluster as start_cluster
from tests.integration.tenancy import RenderedOperator, apply, render_operator
from tests.kubeclient import fresh_namespace
from tests.waiting import wait_for

OPERATOR_IMAGE = "registry.invalid/pulumi-ray/operator:node-tier"
"""The reference the tier's pods give the operator's image: under ``.invalid``, so a
pull could never reach anything, and loaded on the node, so none is tried."""


KUBERAY_IMAGE = f"registry.invalid/kuberay/operator:{kuberay.VERSION}"
"""KubeRay's operator built from its Go module (``make kuberay``), one static binary."""

OPERATOR_READY_SECONDS = 180.0
"""From the Deployment's create to its pod Ready: the kubelet starts the container, the
operator imports and starts, and its readiness probe passes. The probe's own settings
allow about a minute; the rest is for a loaded machine."""


def start_real_node_cluster(state_dir: Path, *, with_kuberay: bool = False) -> LocalCluster:
    """A control plane whose only node is real, with our operator's image loaded under
    ``OPERATOR_IMAGE`` (and, ``with_kuberay``, KubeRay's under ``KUBERAY_IMAGE``);
    stopped with ``stop()``."""
    extra = ()
    if with_kuberay:
        directory = state_dir / "images"
        directory.mkdir(parents=True, exist_ok=True)
        layout = images.kuberay_layout(kuberay.ensure_built().path("ray-operator"),
                                       directory / "kuberay")  # fmt: skip
        extra = (images.node_image(layout, KUBERAY_IMAGE, directory / "kuberay.tar"),)
    return start_cluster(state_dir, OPERATOR_IMAGE, extra)


@pytest.fixture(scope="session")
def real_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    state_dir = tmp_path_factory.mktemp("real-node")
    with start_real_node_cluster(state_dir, with_kuberay=True) as cluster:
        yield cluster


@pytest.fixture
def real_namespace(real_cluster: LocalCluster) -> Iterator[str]:
    with fresh_namespace(real_cluster, prefix="node") as name:
        yield name


@dataclass(frozen=True)
class DeployedOperator:
    rendered: RenderedOperator
    pod: dict[str, Any]
    """Its pod, as it was when it turned Ready."""
    digest: str
    """The image's manifest digest, which the Deployment pins."""


def _ready(pod: dict[str, Any]) -> bool:
    conditions = pod.get("status", {}).get("conditions", [])
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def _ready_pod(cluster: LocalCluster, namespace: str, selector: str) -> dict[str, Any]:
    """The operator's pod once Ready by its own probes."""

    def pods() -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = cluster.get_json("-n", namespace, "pods", "-l", selector)[
            "items"
        ]
        return found

    ready: dict[str, Any] = wait_for(
        "the operator's pod to be Ready by its own probes",
        lambda: next((p for p in pods() if _ready(p)), None),
        timeout=OPERATOR_READY_SECONDS, interval=1.0,
        explain=lambda: [(p["metadata"]["name"], p.get("status", {}).get("containerStatuses"))
                         for p in pods()],
    )  # fmt: skip
    return ready


@contextlib.contextmanager
def deploy_kuberay(cluster: LocalCluster, namespace: str, work_dir: Path
                   ) -> Iterator[dict[str, Any]]:  # fmt: skip
    """KubeRay's operator (``kuberay_manifests``) applied; its pod once Ready."""
    apply(cluster, kuberay.pod_manifests(namespace, KUBERAY_IMAGE), work_dir)
    yield _ready_pod(cluster, namespace, "app.kubernetes.io/name=kuberay-operator")


@contextlib.contextmanager
def deploy_operator(cluster: LocalCluster, namespace: str, work_dir: Path
                    ) -> Iterator[DeployedOperator]:  # fmt: skip
    """The ``RayOperator`` component's ServiceAccount, RBAC and Deployment, as it renders
    them for ``namespace`` (watching it alone), applied; its pod Ready by its own probes;
    its cluster-scoped RBAC deleted after."""
    digest = operator_image().digest
    reference = f"{OPERATOR_IMAGE.rsplit(':', 1)[0]}@{digest}"
    rendered = render_operator(
        namespace, RayOperatorArgs(image=reference, watch_namespaces=[namespace])
    )
    deployment = json.loads(json.dumps(rendered.deployment))
    selector = ",".join(
        f"{k}={v}" for k, v in deployment["spec"]["selector"]["matchLabels"].items()
    )

    try:
        apply(cluster, [*rendered.rbac, deployment], work_dir)
        yield DeployedOperator(rendered, _ready_pod(cluster, namespace, selector), digest)
    finally:
        for manifest in rendered.rbac:
            if manifest["kind"] in ("ClusterRole", "ClusterRoleBinding"):
                cluster.kubectl("delete", manifest["kind"].lower(), manifest["metadata"]["name"],
                                "--wait=false", check=False)  # fmt: skip
