"""What the real-node tier and the real-node benchmark share: a control plane whose only
node is real with both operators' images loaded, each operator deployed as a real pod,
and the Ray clusters the scenarios run.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components import RayOperatorArgs
from hack import kuberay
from hack.image import built as operator_image
from hack.image.collector import COLLECTOR_IMAGE, collector_layout
from hack.image.ray import RAY_IMAGE, RAY_VERSION
from hack.image.ray import built as ray_image
from hack.image.redis import REDIS_IMAGE
from hack.image.redis import built as redis_image
from hack.localcluster import LocalCluster
from hack.localcluster.versions import KUBERNETES
from hack.node import images
from hack.node.cluster import start_real_node_cluster as start_cluster
from hack.node.node import RealNode
from operator_runtime.runtime.kinds import POD, ResourceKind
from tests import tierscope
from tests.integration.tenancy import RenderedOperator, apply, render_operator
from tests.kubeclient import shared_client
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


def start_real_node_cluster(
    state_dir: Path, *, with_kuberay: bool = False, kubernetes: str = KUBERNETES
) -> LocalCluster:
    """A control plane whose only node is real, with our operator's image loaded under
    ``OPERATOR_IMAGE``, the Redis stand-in under ``REDIS_IMAGE`` (the GCS FT scenarios'
    storage), the history-server collector stand-in under ``COLLECTOR_IMAGE`` and,
    ``with_kuberay``, KubeRay's under ``KUBERAY_IMAGE``; Kubernetes ``kubernetes``
    throughout; stopped with ``stop()``."""
    directory = state_dir / "images"
    directory.mkdir(parents=True, exist_ok=True)
    collector = collector_layout(ray_image().layout, directory / "collector")
    extra = [
        images.node_image(redis_image().layout, REDIS_IMAGE, directory / "redis.tar"),
        images.node_image(collector, COLLECTOR_IMAGE, directory / "collector.tar"),
    ]
    if with_kuberay:
        layout = images.kuberay_layout(kuberay.ensure_built().path("ray-operator"),
                                       directory / "kuberay")  # fmt: skip
        extra.append(images.node_image(layout, KUBERAY_IMAGE, directory / "kuberay.tar"))
    return start_cluster(state_dir, OPERATOR_IMAGE, tuple(extra), kubernetes=kubernetes)


@dataclass(frozen=True)
class Deployed:
    """An operator running as a pod on the node."""

    pod: dict[str, Any]
    """Its pod, as it was when it turned Ready."""


@dataclass(frozen=True)
class DeployedOperator(Deployed):
    rendered: RenderedOperator
    digest: str
    """The image's manifest digest, which the Deployment pins."""


def _ready(pod: dict[str, Any]) -> bool:
    conditions = pod.get("status", {}).get("conditions", [])
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def ready_pod(cluster: LocalCluster, namespace: str, selector: str) -> dict[str, Any]:
    """The operator's pod once Ready by its own probes."""

    ready: dict[str, Any] = wait_for(
        "the operator's pod to be Ready by its own probes",
        lambda: next((p for p in pods(cluster, namespace, selector) if _ready(p)), None),
        timeout=OPERATOR_READY_SECONDS, interval=1.0,
        explain=lambda: [(p["metadata"]["name"], p.get("status", {}).get("containerStatuses"))
                         for p in pods(cluster, namespace, selector)],
    )  # fmt: skip
    return ready


@dataclass(frozen=True)
class Scope:
    """How an operator is deployed: watching its own namespace alone (the scenarios'
    way) or every namespace (KubeRay's e2e suite makes a namespace per test), and with
    or without a CPU request (a 2-CPU node fits a KubeRay sample's 2-CPU cluster only
    beside an operator that requests none)."""

    all_namespaces: bool = False
    cpu_request: bool = True


@contextlib.contextmanager
def deploy_kuberay(cluster: LocalCluster, namespace: str, work_dir: Path,
                   scope: Scope = Scope()) -> Iterator[Deployed]:  # fmt: skip
    """KubeRay's operator (``kuberay_manifests``) applied; its pod once Ready; its
    cluster-scoped RBAC deleted after."""
    manifests = kuberay.pod_manifests(namespace, KUBERAY_IMAGE,
                                      all_namespaces=scope.all_namespaces,
                                      cpu_request=scope.cpu_request)  # fmt: skip
    try:
        apply(cluster, manifests, work_dir)
        yield Deployed(ready_pod(cluster, namespace, "app.kubernetes.io/name=kuberay-operator"))
    finally:
        _delete_cluster_scoped(cluster, manifests)


def _delete_cluster_scoped(cluster: LocalCluster, manifests: list[dict[str, Any]]) -> None:
    for manifest in manifests:
        if manifest["kind"] in ("ClusterRole", "ClusterRoleBinding"):
            cluster.kubectl("delete", manifest["kind"].lower(), manifest["metadata"]["name"],
                            "--wait=false", check=False)  # fmt: skip


@contextlib.contextmanager
def deploy_operator(cluster: LocalCluster, namespace: str, work_dir: Path,
                    scope: Scope = Scope(),
                    feature_gates: Mapping[str, bool] | None = None,
                    ) -> Iterator[DeployedOperator]:  # fmt: skip
    """The ``RayOperator`` component's ServiceAccount, RBAC and Deployment, as it renders
    them for ``namespace`` (watching it alone unless ``scope`` says all, with
    ``feature_gates`` on or off besides the defaults), applied; its pod Ready by its own
    probes; its cluster-scoped RBAC deleted after."""
    digest = operator_image().digest
    reference = f"{OPERATOR_IMAGE.rsplit(':', 1)[0]}@{digest}"
    resources = None if scope.cpu_request else {"requests": {"memory": "256Mi"},
                                                "limits": {"memory": "1Gi"}}  # fmt: skip
    rendered = render_operator(
        namespace,
        RayOperatorArgs(image=reference, resources=resources,
                        watch_namespaces=[] if scope.all_namespaces else [namespace],
                        feature_gates=feature_gates),
    )  # fmt: skip
    deployment = json.loads(json.dumps(rendered.deployment))
    selector = ",".join(
        f"{k}={v}" for k, v in deployment["spec"]["selector"]["matchLabels"].items()
    )

    try:
        apply(cluster, [*rendered.rbac, deployment], work_dir)
        yield DeployedOperator(ready_pod(cluster, namespace, selector), rendered, digest)
    finally:
        _delete_cluster_scoped(cluster, rendered.rbac)


def ray_container(name: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "image": RAY_IMAGE,
        "imagePullPolicy": "IfNotPresent",
        "resources": {"requests": {"cpu": "200m", "memory": "1Gi"},
                      "limits": {"cpu": "1", "memory": "2Gi"}},
        **extra,
    }  # fmt: skip


def cluster_spec(workers: int, **container: Any) -> dict[str, Any]:
    """A RayCluster's spec: a head and ``workers`` workers in one group (none: no group).
    Every Ray node costs the node a GCS or raylet, a dashboard agent and a runtime-env
    agent, seconds of CPU to start, so a scenario asks for workers only where it is
    about them."""
    workers_group = {
        "groupName": "cpu", "replicas": workers, "minReplicas": 0, "maxReplicas": workers,
        "rayStartParams": {},
        "template": {"spec": {"containers": [ray_container("ray-worker", **container)]}},
    }  # fmt: skip
    return {
        "rayVersion": RAY_VERSION,
        "headGroupSpec": {
            "rayStartParams": {},
            "template": {"spec": {"containers": [ray_container("ray-head", **container)]}},
        },
        "workerGroupSpecs": [workers_group] if workers else [],
    }


def pods(cluster: LocalCluster, namespace: str, selector: str) -> list[dict[str, Any]]:
    """``namespace``'s pods that the label ``selector`` picks, through the process's own
    client: the tier polls this every second or two, and a kubectl per look cost some
    70 ms of CPU (the client's list, 1 ms) on a loaded machine."""
    items: list[dict[str, Any]] = shared_client(cluster).list(
        POD, namespace, label_selector=selector)["items"]  # fmt: skip
    return items


HOPELESS = {
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "CreateContainerConfigError",
    "CreateContainerError",
    "RunContainerError",
}
"""Waiting reasons no amount of waiting mends: a test fails at once, naming the pod."""
MENDED_BY_WAITING = "failed to sync"
"""Except this one: a CreateContainerConfigError whose message starts so is the kubelet's
secret or configmap cache not synced in time (a loaded API server), retried by the
kubelet; a missing Secret or key says otherwise."""


def all_ready(pods: list[dict[str, Any]], count: int) -> bool:
    def ready(pod: dict[str, Any]) -> bool:
        status = pod.get("status", {})
        for container in status.get("initContainerStatuses", []) + status.get(
            "containerStatuses", []
        ):
            waiting = container.get("state", {}).get("waiting", {})
            transient = str(waiting.get("message", "")).startswith(MENDED_BY_WAITING)
            assert transient or waiting.get("reason") not in HOPELESS, (
                pod["metadata"]["name"], waiting)  # fmt: skip
        conditions = status.get("conditions", [])
        return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

    return len(pods) == count and all(map(ready, pods))


def server_side_apply(cluster: LocalCluster, namespace: str, manifest: dict[str, Any]) -> None:
    cluster.kubectl("-n", namespace, "apply", "--server-side", "-f", "-",
                    input=json.dumps(manifest))  # fmt: skip


def pod_states(cluster: LocalCluster, namespace: str) -> list[object]:
    """Each Ray pod's container states and, for one not Ready, the kubelet's last probe
    failures (what its probe command printed)."""
    states: list[object] = []
    for pod in pods(cluster, namespace, "ray.io/cluster"):
        name, status = pod["metadata"]["name"], pod.get("status", {})
        states.append((name, [(c["name"], c.get("ready"), c.get("restartCount"), c.get("state"))
                              for c in status.get("containerStatuses", [])]))  # fmt: skip
        if not all_ready([pod], 1):
            selector = f"involvedObject.name={name}"
            events = cluster.get_json("-n", namespace, "events", "--field-selector", selector)
            states.append([(e.get("reason"), e.get("count"), e.get("message", "")[:300])
                           for e in events["items"][-5:]])  # fmt: skip
    return states


RAY_KINDS = "rayservices.ray.io,rayjobs.ray.io,rayclusters.ray.io"
RAY_PODS_GONE_SECONDS = 120.0
"""From the delete to the last Ray pod gone: a kubelet's SIGKILL after the one-second
grace, and the kubelet's report of it, on a loaded machine."""


def gone(cluster: LocalCluster, namespace: str, kind: ResourceKind, name: str) -> bool:
    """Whether ``kind`` ``name`` no longer exists in ``namespace`` (polled, as ``pods``)."""
    return shared_client(cluster).find(kind, name, namespace) is None


def ray_gone(cluster: LocalCluster, namespace: str) -> None:
    """Delete ``namespace``'s Ray objects and their pods, and return once no Ray pod is
    left, so that the next scenario's Ray starts on a node that no longer runs this one's.

    The pods go with a one-second grace rather than the default 30 s a Ray container
    may take to stop, each running all the while. Bounded: pods still there after
    ``RAY_PODS_GONE_SECONDS`` are named on stdout, and the next scenario runs beside
    them."""
    cluster.kubectl("-n", namespace, "delete", RAY_KINDS, "--all", "--wait=false", check=False)
    cluster.kubectl("-n", namespace, "delete", "pods", "-l", "ray.io/cluster",
                    "--grace-period=1", "--wait=false", check=False)  # fmt: skip
    try:
        wait_for("the scenario's Ray pods gone",
                 lambda: not pods(cluster, namespace, "ray.io/cluster"),
                 timeout=RAY_PODS_GONE_SECONDS, interval=1.0,
                 explain=lambda: pod_states(cluster, namespace))  # fmt: skip
    except AssertionError as error:  # wait_for's timeout
        print(f"\nleft running into the next scenario: {error}", flush=True)


def real_node(cluster: LocalCluster) -> RealNode:
    """The cluster's real node (every cluster of this tier has one)."""
    assert cluster.real_node is not None, "a control plane without a real node"
    return cluster.real_node


BOTH = ("ours", f"kuberay-{kuberay.VERSION}")


def operators(*, compared_in_make_test: bool) -> tuple[str, ...]:
    """The operators a module's scenarios run under: both, or (for the long scenarios,
    whose KubeRay side ``make node-compare`` runs, so that ``make test`` keeps two cores
    from running two sets of Ray pods beside the other tiers) ours alone."""
    return BOTH if compared_in_make_test or tierscope.full_node_tier() else BOTH[:1]
