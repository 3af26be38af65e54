"""The RayJob controller against the real control plane and a real Ray head.

The operator runs as users run it (``tests/operatorprocess.py``: ``python -m
operator_runtime``, both controllers, flags and environment only). kwok runs the
RayJob's cluster without containers; the cluster's head is the module's real Ray head
(``ray start --head``), reached the way the operator would in a cluster:

- directly: ``<cluster>-head-svc.<ns>.svc.cluster.local`` is mapped to 127.0.0.1 in the
  sandbox's ``/etc/hosts`` as soon as the cluster exists (``ClusterHosts``);
- through the API server's service proxy (``--use-kubernetes-proxy``): the API server
  dials the kwok head pod's IP, which the sandbox routes to this machine.

Either way the head container declares the real head's dashboard port as its
``dashboard`` port, so the head Service and ``status.dashboardURL`` carry it.
"""

from __future__ import annotations

import copy
from contextlib import suppress
from typing import Any

import pytest

from hack.clusterhosts import ClusterHosts  # noqa: F401 (the tests import it from here)
from hack.localcluster import LocalCluster
from hack.rayhead import RayHead
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.errors import NotFound
from operator_runtime.runtime.kinds import RAY_CLUSTER, RAY_JOB, Object
from tests.integration.raycluster.conftest import (  # noqa: F401 (fixtures)
    container,
    gc_knows_rayclusters,
    gc_probe,
    make_client,
    ray_crds,
)
from tests.operatorprocess import OperatorProcess
from tests.rayhead import module_ray_head, ray_head  # noqa: F401 (fixtures)


@pytest.fixture
def kube(ray_crds: LocalCluster) -> KubeClient:  # noqa: F811
    return make_client(ray_crds)


def operator(
    cluster: LocalCluster, namespace: str, *flags: str, env: dict[str, str] | None = None
) -> OperatorProcess:
    return OperatorProcess(cluster.kubeconfig, namespace, *flags, env=env)


def rayjob(name: str, namespace: str, head: RayHead, **spec: Any) -> dict[str, Any]:
    """A RayJob whose cluster's head is ``head``: one head, one worker group of 0."""
    head_container = container("ray-head")
    head_container["ports"] = [{"name": "dashboard", "containerPort": head.dashboard_port}]
    manifest: dict[str, Any] = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "entrypoint": "python -c \"print('hello')\"",
            "rayClusterSpec": {
                "rayVersion": "2.52.1",
                "headGroupSpec": {"template": {"spec": {"containers": [head_container]}}},
                "workerGroupSpecs": [
                    {
                        "groupName": "small",
                        "replicas": 0,
                        "minReplicas": 0,
                        "maxReplicas": 2,
                        "template": {"spec": {"containers": [container("ray-worker")]}},
                    }
                ],
            },
        },
    }
    manifest["spec"].update(copy.deepcopy(spec))
    return manifest


def get_job(kube: KubeClient, namespace: str, name: str) -> Object:
    return kube.get(RAY_JOB, name, namespace)


def job_status(kube: KubeClient, namespace: str, name: str) -> dict[str, Any]:
    status: dict[str, Any] = get_job(kube, namespace, name).get("status") or {}
    return status


def describe_job(kube: KubeClient, namespace: str, name: str) -> dict[str, Any]:
    """For a timeout's message: the RayJob's status and its RayCluster's."""
    status = job_status(kube, namespace, name)
    cluster: dict[str, Any] = {}
    if status.get("rayClusterName"):
        with suppress(NotFound):
            found = kube.get(RAY_CLUSTER, status["rayClusterName"], namespace)
            cluster = found.get("status") or {}
    return {"rayjob": status, "raycluster": cluster}


def reaches(kube: KubeClient, namespace: str, name: str, *states: str) -> Any:
    """A condition for ``wait_for``: the RayJob's jobDeploymentStatus is one of ``states``."""

    def check() -> dict[str, Any] | None:
        status = job_status(kube, namespace, name)
        return status if status.get("jobDeploymentStatus") in states else None

    return check
