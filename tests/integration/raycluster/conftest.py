"""The RayCluster controller against the real control plane (kwok nodes run the pods).

``operator`` runs our operator in-process: a runtime ``Manager`` with only the
RayCluster controller, watching the test's namespace, stopped (and required to drain
cleanly) at the end of the test. ``PodLedger`` counts pod creations and deletions from
a watch of its own, never from the operator's logs, so a test sees what really happened
on the API server.
"""

from __future__ import annotations

import copy
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from hack.localcluster import LocalCluster
from operator_runtime.controllers.raycluster import RayClusterController, RayClusterOptions
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.errors import NotFound
from operator_runtime.runtime.kinds import CONFIG_MAP, EVENT, POD, RAY_CLUSTER, Object
from operator_runtime.runtime.manager import Manager, ManagerOptions
from operator_runtime.runtime.metrics import RuntimeMetrics
from tests.integration.managers import manager_running
from tests.kubeclient import edit, make_client
from tests.waiting import wait_for

REPO_ROOT = Path(__file__).resolve().parents[3]
CRD_DIR = REPO_ROOT / "operator_runtime" / "api" / "crds"
RAY_CRD_NAMES = tuple(
    f"{plural}.{group}"
    for group, plural in (path.stem.split("_", 1) for path in sorted(CRD_DIR.glob("*.yaml")))
)
"""``rayclusters.ray.io`` ...: the files are named ``<group>_<plural>.yaml``."""


@dataclass
class GcProbe:
    """Whether the garbage collector handles RayCluster owners yet (see ``ray_crds``)."""

    done: threading.Event = field(default_factory=threading.Event)
    error: list[BaseException] = field(default_factory=list)


@pytest.fixture(scope="session")
def gc_probe() -> GcProbe:
    return GcProbe()


@pytest.fixture(scope="session")
def ray_crds(local_cluster: LocalCluster, gc_probe: GcProbe) -> LocalCluster:
    # Server-side apply: the CRDs are larger than the client-side last-applied annotation.
    local_cluster.apply_crds(CRD_DIR)
    # All four: a RayJob created while only rayclusters was Established got a 404.
    local_cluster.wait_for_crds(*RAY_CRD_NAMES)
    threading.Thread(target=_probe_gc, args=(local_cluster, gc_probe), daemon=True).start()
    return local_cluster


def _probe_gc(cluster: LocalCluster, probe: GcProbe) -> None:
    """The garbage collector discovers new CRDs on a periodic resync; until then it
    cannot collect the children of a deleted RayCluster. A ConfigMap owned by a
    throwaway RayCluster must go when the cluster does. Runs in the background from
    the moment the CRDs exist, so only a test that needs the collector waits for it."""
    try:
        client = make_client(cluster)
        name = f"gc-probe-{uuid.uuid4().hex[:8]}"
        owner = client.create(raycluster(name, "default", workers=0))
        client.create(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": name,
                    "namespace": "default",
                    "ownerReferences": [
                        {
                            "apiVersion": "ray.io/v1",
                            "kind": "RayCluster",
                            "name": name,
                            "uid": owner["metadata"]["uid"],
                        }
                    ],
                },
            }
        )
        client.delete(RAY_CLUSTER, name, "default")

        def collected() -> bool:
            try:
                client.get(CONFIG_MAP, name, "default")
            except NotFound:
                return True
            return False

        wait_for(
            "the garbage collector to handle RayCluster owners",
            collected,
            timeout=120,
            interval=0.5,
        )
    except BaseException as exc:  # reported by the test that needs the collector
        probe.error.append(exc)
    finally:
        probe.done.set()


@pytest.fixture
def gc_knows_rayclusters(ray_crds: LocalCluster, gc_probe: GcProbe) -> None:
    gc_probe.done.wait(150)
    if gc_probe.error:
        raise gc_probe.error[0]
    assert gc_probe.done.is_set(), "the garbage collector probe never finished"


@pytest.fixture
def client(ray_crds: LocalCluster) -> KubeClient:
    return make_client(ray_crds)


@dataclass
class RunningOperator:
    manager: Manager
    controller: RayClusterController
    registry: CollectorRegistry

    def sample(self, name: str, labels: dict[str, str]) -> float | None:
        return self.registry.get_sample_value(name, labels)


@contextmanager
def running_operator(
    cluster: LocalCluster, namespace: str, options: RayClusterOptions | None = None
) -> Iterator[RunningOperator]:
    client = make_client(cluster)
    registry = CollectorRegistry()
    metrics = RuntimeMetrics(registry)
    client.set_observer(metrics.observe_request)
    manager = Manager(
        client,
        ManagerOptions(
            namespaces=(namespace,), concurrency=2, metrics_address="0", health_address="0"
        ),
        metrics=metrics,
    )
    controller = RayClusterController(
        manager.context(), options or RayClusterOptions(), metrics_registry=registry
    )
    manager.add(controller)
    with manager_running(manager):
        yield RunningOperator(manager, controller, registry)


@pytest.fixture
def operator(ray_crds: LocalCluster, namespace: str) -> Iterator[RunningOperator]:
    with running_operator(ray_crds, namespace) as running:
        yield running


# -- manifests --------------------------------------------------------------------------


def container(name: str, image: str = "rayproject/ray:2.52.0") -> dict[str, Any]:
    return {
        "name": name,
        "image": image,
        "resources": {
            "requests": {"cpu": "1", "memory": "1Gi"},
            "limits": {"cpu": "1", "memory": "1Gi"},
        },
    }


def raycluster(
    name: str,
    namespace: str,
    *,
    workers: int = 5,
    group: str = "small",
    annotations: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    manifest: dict[str, Any] = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "namespace": namespace, "annotations": annotations or {}},
        "spec": {
            "rayVersion": "2.52.0",
            "headGroupSpec": {"template": {"spec": {"containers": [container("ray-head")]}}},
            "workerGroupSpecs": [
                {
                    "groupName": group,
                    "replicas": workers,
                    "minReplicas": 0,
                    "maxReplicas": 100,
                    "template": {"spec": {"containers": [container("ray-worker")]}},
                }
            ],
        },
    }
    manifest["spec"].update(copy.deepcopy(spec))
    return manifest


# -- reading the cluster ----------------------------------------------------------------


def get_cluster(client: KubeClient, namespace: str, name: str) -> Object:
    return client.get(RAY_CLUSTER, name, namespace)


def condition(obj: Object, type_: str) -> Object | None:
    for item in (obj.get("status") or {}).get("conditions") or ():
        if item.get("type") == type_:
            return dict(item)
    return None


def condition_true(client: KubeClient, namespace: str, name: str, type_: str) -> bool:
    found = condition(get_cluster(client, namespace, name), type_)
    return found is not None and found.get("status") == "True"


def pods(client: KubeClient, namespace: str, selector: str) -> list[Object]:
    items: list[Object] = client.list(POD, namespace, label_selector=selector)["items"]
    return items


def live_pods(client: KubeClient, namespace: str, name: str, node_type: str = "") -> list[Object]:
    selector = f"ray.io/cluster={name}" + (f",ray.io/node-type={node_type}" if node_type else "")
    return [
        p for p in pods(client, namespace, selector) if not p["metadata"].get("deletionTimestamp")
    ]


def running_ready(pod: Object) -> bool:
    status = pod.get("status") or {}
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or ()
    )
    return status.get("phase") == "Running" and ready


def events(
    client: KubeClient, namespace: str, reason: str, name: str | None = None
) -> list[Object]:
    found = []
    for event in client.list(EVENT, namespace)["items"]:
        regarding = event.get("regarding") or {}
        if event.get("reason") == reason and (name is None or regarding.get("name") == name):
            found.append(event)
    return found


def recorded(
    client: KubeClient, namespace: str, reason: str, name: str, timeout: float = 30.0
) -> list[Object]:
    """The ``reason`` Events about ``name``, once there is one: the operator writes Events
    from a background queue (``runtime/events.py``), after the status that led to them."""
    found: list[Object] = wait_for(
        f"a {reason} Event about {name}", lambda: events(client, namespace, reason, name),
        timeout=timeout, interval=0.5,
    )  # fmt: skip
    return found


def set_replicas(client: KubeClient, namespace: str, name: str, replicas: int) -> None:
    def scale(cluster: Object) -> None:
        cluster["spec"]["workerGroupSpecs"][0]["replicas"] = replicas

    edit(client, RAY_CLUSTER, name, namespace, scale)


def poke(client: KubeClient, namespace: str, name: str, value: str) -> None:
    """Change an annotation: makes the operator reconcile the cluster right now."""
    client.patch(RAY_CLUSTER, name, namespace, {"metadata": {"annotations": {"test/poke": value}}})


def settle(seconds: float) -> None:
    """Give the operator time to do something wrong (a test that counts must wait)."""
    time.sleep(seconds)
