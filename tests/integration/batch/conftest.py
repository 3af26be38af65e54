"""Batch scheduling against the real schedulers: Kueue (``hack/kueue``) built from its Go
module and run beside the local control plane, our operator as users run it
(``tests/operatorprocess.py``), and the module's real Ray head for the jobs to run on.

Kueue's webhooks and job controllers act only in namespaces labelled
``hack.kueue.run.NAMESPACE_LABEL`` (``queued_namespace``), so the other modules sharing
this worker's control plane never depend on it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hack.kueue import run as kueue_run
from hack.localcluster import LocalCluster
from operator_runtime.runtime.client import KubeClient
from tests.integration.raycluster.conftest import (  # noqa: F401 (fixtures)
    gc_probe,
    make_client,
    ray_crds,
    wait_for,
)
from tests.rayhead import module_ray_head, ray_head  # noqa: F401 (fixtures)


@pytest.fixture(scope="module")
def kueue(
    ray_crds: LocalCluster,  # noqa: F811 (a fixture)
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Path]:
    """Kueue running, ready to admit; yields its log file."""
    with kueue_run.running(ray_crds, tmp_path_factory.mktemp("kueue")) as log:
        yield log


@pytest.fixture
def kube(ray_crds: LocalCluster) -> KubeClient:  # noqa: F811
    return make_client(ray_crds)


@pytest.fixture
def queued_namespace(ray_crds: LocalCluster, kueue: Path) -> Iterator[str]:  # noqa: F811
    """A fresh namespace Kueue manages, its ``default`` ServiceAccount created."""
    name = f"q-{uuid.uuid4().hex[:10]}"
    ray_crds.kubectl("create", "namespace", name)
    ray_crds.kubectl("label", "namespace", name, f"{kueue_run.NAMESPACE_LABEL}=enabled")
    wait_for(
        f"ServiceAccount {name}/default",
        lambda: ray_crds.kubectl("-n", name, "get", "sa", "default", check=False).returncode == 0,
        timeout=60,
    )
    yield name
    ray_crds.kubectl("delete", "namespace", name, "--wait=false", check=False)


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
