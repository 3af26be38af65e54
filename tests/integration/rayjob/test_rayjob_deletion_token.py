"""Deleting a RayJob always ends: stopping its Ray job is best effort.

A RayJob whose Ray job may still run is stopped through its cluster's dashboard before
the finalizer goes. When the cluster uses token auth, the token comes from a Secret the
tenant controls; a Secret without ``auth_token`` once made every pass fail, so the
finalizer (and the RayJob, and its namespace) stayed for good. The state is laid out
before the operator starts, so the first pass it makes is the deletion.
"""

from __future__ import annotations

from typing import Any

from hack.localcluster import LocalCluster
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.errors import NotFound
from operator_runtime.runtime.kinds import RAY_CLUSTER, RAY_JOB, SECRET
from tests.integration.raycluster.conftest import events, raycluster
from tests.integration.rayjob.conftest import operator
from tests.waiting import wait_for

FINALIZER = "ray.io/rayjob-finalizer"
DELETION = 60.0
"""The operator's start (imports, informer sync) and one pass, on two shared cores."""


def _gone(kube: KubeClient, namespace: str, name: str) -> bool:
    try:
        kube.get(RAY_JOB, name, namespace)
    except NotFound:
        return True
    return False


def test_deletion_ends_when_the_token_secret_has_no_auth_token(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str
) -> None:
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "no-token", "namespace": namespace},
            "data": {"something-else": "eA=="},
        }
    )
    kube.create(
        raycluster(
            "shared", namespace, workers=0, authOptions={"mode": "token", "secretName": "no-token"}
        )
    )
    job: dict[str, Any] = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "leaving", "namespace": namespace, "finalizers": [FINALIZER]},
        "spec": {
            "entrypoint": "python -c pass",
            "clusterSelector": {"ray.io/cluster": "shared"},
        },
    }
    created = kube.create(job)
    kube.update_status(
        {
            **created,
            "status": {
                "jobId": "leaving-abc12",
                "jobStatus": "RUNNING",
                "jobDeploymentStatus": "Running",
                "rayClusterName": "shared",
                "dashboardURL": "127.0.0.1:9",
            },
        }
    )
    kube.delete(RAY_JOB, "leaving", namespace)
    assert kube.get(RAY_CLUSTER, "shared", namespace)
    assert kube.get(SECRET, "no-token", namespace)

    with operator(ray_crds, namespace) as running:
        wait_for(
            "the RayJob to be gone",
            lambda: _gone(kube, namespace, "leaving"),
            timeout=DELETION,
            explain=running.tail,
        )
        warnings = wait_for(
            "a FailedToStopRayJob event",
            lambda: events(kube, namespace, "FailedToStopRayJob", "leaving"),
            timeout=10,
        )
    assert "leaving-abc12" in warnings[0]["note"], warnings[0]
