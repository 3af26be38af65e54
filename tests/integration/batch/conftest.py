"""Batch scheduling against the real schedulers: Kueue (``hack/kueue``) built from its Go
module and run beside the local control plane, our operator as users run it
(``tests/operatorprocess.py``), and the module's real Ray head for the jobs to run on.

Kueue's webhooks and job controllers act only in namespaces labelled
``hack.kueue.run.NAMESPACE_LABEL`` (``queued_namespace``), so the other modules sharing
this worker's control plane never depend on it.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from hack.kueue import run as kueue_run
from hack.localcluster import LocalCluster
from operator_runtime.runtime.client import KubeClient
from tests.integration.raycluster.conftest import (  # noqa: F401 (fixtures)
    gc_probe,
    make_client,
    ray_crds,
)
from tests.kept import Keeper, keeping
from tests.kubeclient import fresh_namespace
from tests.rayhead import module_ray_head, ray_head  # noqa: F401 (fixtures)
from tests.waiting import wait_for


@pytest.fixture(scope="session")
def kueue_keeper(ray_crds: LocalCluster) -> Iterator[Keeper[kueue_run.Kueue]]:  # noqa: F811
    """Keeps Kueue between modules (``tests/kept.py``); it ends before the control plane
    it uninstalls its webhooks from."""
    yield from keeping("kueue")


@pytest.fixture(scope="module")
def kueue(
    ray_crds: LocalCluster,  # noqa: F811 (a fixture)
    kueue_keeper: Keeper[kueue_run.Kueue],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[kueue_run.Kueue]:
    """Kueue running, ready to admit: the one the worker kept from its module before
    (the Kueue modules are one work group, ``tests/conftest.py``), or a new one. Its
    state between modules is the tests' own: each namespace, queue and workload goes
    with the test that made it."""

    def start() -> kueue_run.Kueue:
        started = time.monotonic()
        manager = kueue_run.start(ray_crds, tmp_path_factory.mktemp("kueue"))
        print(f"\nKueue: installed and ready in {time.monotonic() - started:.1f} s")
        return manager

    yield from kueue_keeper.kept(start, stop=kueue_run.Kueue.stop, reset=kueue_run.Kueue.ready)


@pytest.fixture(scope="module")
def gc_knows_workloads(ray_crds: LocalCluster, kueue: kueue_run.Kueue) -> None:  # noqa: F811
    """Wait until the garbage collector watches Workloads. A Workload goes with the
    RayCluster that owns it by garbage collection, and Kueue gives its quota back only
    then; the collector starts watching a new CRD's kind on a periodic resync, so on a
    fresh control plane that took 13 s once (a ConfigMap owned by a throwaway Workload
    must go when the Workload does)."""
    name = f"gc-probe-{uuid.uuid4().hex[:8]}"
    workload = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {"spec": {"containers": [{"name": "c", "image": "probe"}]}},
                }
            ]
        },
    }
    ray_crds.kubectl("apply", "-f", "-", input=yaml.safe_dump(workload))
    uid = ray_crds.get_json("-n", "default", "workloads.kueue.x-k8s.io", name)["metadata"]["uid"]
    owned = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": "default",
            "ownerReferences": [
                {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "name": name,
                 "uid": uid},
            ],
        },
    }  # fmt: skip
    ray_crds.kubectl("apply", "-f", "-", input=yaml.safe_dump(owned))
    ray_crds.kubectl("-n", "default", "delete", "workloads.kueue.x-k8s.io", name, "--wait=false")
    wait_for(
        "the garbage collector to handle Workload owners",
        lambda: ray_crds.kubectl("-n", "default", "get", "configmap", name, check=False)
        .returncode != 0,
        timeout=120, interval=0.5,
    )  # fmt: skip


@pytest.fixture
def kube(ray_crds: LocalCluster) -> KubeClient:  # noqa: F811
    return make_client(ray_crds)


@pytest.fixture
def queued_namespace(ray_crds: LocalCluster, kueue: kueue_run.Kueue) -> Iterator[str]:  # noqa: F811
    """A fresh namespace Kueue manages, its ``default`` ServiceAccount created."""
    labels = {kueue_run.NAMESPACE_LABEL: "enabled"}
    with fresh_namespace(ray_crds, "q", labels) as name:
        yield name


def apply_quota(cluster: LocalCluster, namespace: str, *, cpu: str, memory: str) -> None:
    """Create ``quota``'s objects and wait for the ClusterQueue to be Active: Kueue's
    readiness is its webhook server's, its controllers may still be syncing then."""
    documents = quota(namespace, cpu=cpu, memory=memory)
    cluster.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump_all(documents))
    cluster.kubectl(
        "wait", "--for=condition=Active", "--timeout=60s",
        f"clusterqueue.kueue.x-k8s.io/{namespace}",
    )  # fmt: skip


def delete_quota(cluster: LocalCluster, namespace: str) -> None:
    """The ClusterQueue (its finalizer holds it while Workloads remain: not waited for)."""
    cluster.kubectl("delete", "clusterqueue.kueue.x-k8s.io", namespace, "--wait=false", check=False)


def workload_owners(cluster: LocalCluster, namespace: str) -> dict[str, dict[str, str]]:
    """The namespace's Workloads by the object that owns each: condition type -> status."""
    found = cluster.get_json("-n", namespace, "workloads.kueue.x-k8s.io")
    by_owner = {}
    for item in found["items"]:
        owners = item["metadata"].get("ownerReferences") or [{}]
        conditions = {
            c["type"]: c["status"] for c in (item.get("status") or {}).get("conditions") or ()
        }
        by_owner[owners[0].get("name", "")] = conditions
    return by_owner


def create_in_order(
    kube: KubeClient, cluster: LocalCluster, namespace: str, *manifests: dict[str, Any]
) -> None:
    """Create each object once the one before has its Workload: Kueue queues Workloads
    in creation order, so the first is the one admitted."""
    for manifest in manifests:
        kube.create(manifest)
        name = manifest["metadata"]["name"]
        wait_for(
            f"a Workload for {name}",
            lambda name=name: name in workload_owners(cluster, namespace),
            30, 0.05,
        )  # fmt: skip


def quota(namespace: str, *, cpu: str, memory: str) -> list[dict[str, Any]]:
    """A ResourceFlavor, a ClusterQueue of ``cpu``/``memory`` for ``namespace`` alone,
    and its LocalQueue ``queue``: the ClusterQueue is named after the namespace."""
    flavor = "default-flavor"
    return [
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": flavor},
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": namespace},
            "spec": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "memory"],
                        "flavors": [
                            {
                                "name": flavor,
                                "resources": [
                                    {"name": "cpu", "nominalQuota": cpu},
                                    {"name": "memory", "nominalQuota": memory},
                                ],
                            }
                        ],
                    }
                ],
            },
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": "queue", "namespace": namespace},
            "spec": {"clusterQueue": namespace},
        },
    ]
