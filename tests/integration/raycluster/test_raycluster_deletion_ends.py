"""A RayCluster held by the GCS FT finalizer is always released: whatever is wrong
with the object, and whatever the settings, the deletion ends.

Each test puts a cluster into one broken state while no operator runs (the finalizer
is set by the manifest, as a previous operator would have), deletes it, then starts
the operator and measures how long the deletion takes to finish.
"""

from __future__ import annotations

import time
from typing import Any

from hack.localcluster import LocalCluster
from operator_runtime.api.finalizers import Finalizer
from operator_runtime.controllers.raycluster import RayClusterOptions
from operator_runtime.controllers.raycluster.gcsft import finish_deletion
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.clock import SystemClock
from operator_runtime.runtime.errors import NotFound
from operator_runtime.runtime.kinds import JOB, RAY_CLUSTER
from operator_runtime.runtime.reconcile import ObjectKey
from tests.clustertools import ListSink, cluster_tools
from tests.integration.raycluster.conftest import (
    events,
    get_cluster,
    raycluster,
    recorded,
    running_operator,
)
from tests.waiting import wait_for

FINALIZER = Finalizer.GCS_FT_REDIS_CLEANUP.value
HOLD = "test.pulumi-ray/hold"
FT = {"gcsFaultToleranceOptions": {"redisAddress": "redis.example:6379"}}
CANNOT_BUILD_DEADLINE = 24


def _ft_cluster(name: str, namespace: str, *, timeout: str | None = None) -> dict[str, Any]:
    annotations = {"ray.io/gcs-ft-deletion-timeout": timeout} if timeout else None
    manifest = raycluster(name, namespace, workers=0, annotations=annotations, **FT)
    manifest["metadata"]["finalizers"] = [FINALIZER]
    return manifest


def _gone(client: KubeClient, namespace: str, name: str) -> bool:
    try:
        get_cluster(client, namespace, name)
    except NotFound:
        return True
    return False


def _finalizers(client: KubeClient, namespace: str, name: str) -> list[str]:
    return list(get_cluster(client, namespace, name)["metadata"].get("finalizers") or ())


def _seconds_until_gone(
    cluster: LocalCluster,
    client: KubeClient,
    namespace: str,
    name: str,
    options: RayClusterOptions | None = None,
) -> float:
    with running_operator(cluster, namespace, options):
        started = time.monotonic()
        wait_for("cluster deleted", lambda: _gone(client, namespace, name), timeout=30)
        return time.monotonic() - started


def test_an_invalid_cluster_being_deleted_is_released_by_the_deadline(
    ray_crds: LocalCluster, client: KubeClient, namespace: str
) -> None:
    manifest = _ft_cluster("badspec", namespace, timeout="3")
    # The API server takes it; our validation refuses it (KubeRay: always an error).
    manifest["spec"]["headGroupSpec"]["rayStartParams"] = {"redis-username": "admin"}
    client.create(manifest)
    client.delete(RAY_CLUSTER, "badspec", namespace)
    # Old code: the validation gate ended every pass before the finalizer step.
    elapsed = _seconds_until_gone(ray_crds, client, namespace, "badspec")
    assert elapsed < 15, elapsed


def test_an_unreadable_cluster_being_deleted_is_released_by_the_deadline(
    ray_crds: LocalCluster, client: KubeClient, namespace: str
) -> None:
    created = client.create(_ft_cluster("garbled", namespace, timeout="3"))
    # A status another writer left behind: the server's schema allows it, our model
    # does not (a condition status must be True, False or Unknown).
    created["status"] = {
        "conditions": [
            {
                "type": "Odd",
                "status": "Maybe",
                "reason": "Other",
                "message": "",
                "lastTransitionTime": "2024-01-01T00:00:00Z",
            }
        ]
    }
    client.update_status(created)
    client.delete(RAY_CLUSTER, "garbled", namespace)
    # Old code: a parse failure returned before anything else, forever.
    elapsed = _seconds_until_gone(ray_crds, client, namespace, "garbled")
    assert elapsed < 15, elapsed
    notes = [e.get("note", "") for e in events(client, namespace, "InvalidRayClusterSpec")]
    assert any("status.conditions.0.status" in note for note in notes), notes
    assert not any("Maybe" in note for note in notes), "the event echoes the object's values"


def test_with_redis_cleanup_disabled_the_finalizer_is_removed_at_once(
    ray_crds: LocalCluster, client: KubeClient, namespace: str
) -> None:
    # The finalizer was added while cleanup was on; the operator now runs with it off.
    client.create(_ft_cluster("nocleanup", namespace))
    client.delete(RAY_CLUSTER, "nocleanup", namespace)
    options = RayClusterOptions(gcs_ft_redis_cleanup=False)
    # Old code: the flow fell through to "being deleted, nothing to do" for good.
    elapsed = _seconds_until_gone(ray_crds, client, namespace, "nocleanup", options)
    assert elapsed < 10, elapsed  # at once, not after the 300 s default deadline


def test_gcs_ft_removed_from_the_spec_while_deleting_releases_the_finalizer_at_once(
    ray_crds: LocalCluster, client: KubeClient, namespace: str
) -> None:
    manifest = _ft_cluster("noft", namespace)
    manifest["metadata"]["finalizers"].append(HOLD)  # keeps it while the test edits it
    client.create(manifest)
    client.delete(RAY_CLUSTER, "noft", namespace)
    cluster = get_cluster(client, namespace, "noft")
    del cluster["spec"]["gcsFaultToleranceOptions"]
    client.update(cluster)
    try:
        with running_operator(ray_crds, namespace):
            wait_for(
                "our finalizer removed",
                lambda: FINALIZER not in _finalizers(client, namespace, "noft"),
                timeout=10,
            )
    finally:
        client.patch(RAY_CLUSTER, "noft", namespace, {"metadata": {"finalizers": None}})
    wait_for("cluster deleted", lambda: _gone(client, namespace, "noft"))


def test_a_cleanup_job_that_cannot_be_built_is_retried_and_released_by_the_deadline(
    ray_crds: LocalCluster, client: KubeClient, namespace: str
) -> None:
    # The API server takes a template without containers; the Job is built from the
    # head's template, so building it fails on every pass.
    manifest = _ft_cluster("nocontainers", namespace, timeout=str(CANNOT_BUILD_DEADLINE))
    manifest["spec"]["headGroupSpec"]["template"]["spec"]["containers"] = []
    client.create(manifest)
    client.delete(RAY_CLUSTER, "nocontainers", namespace)
    # Old code: the error fell to the manager's backoff (5 ms doubling): its retries
    # come 20.5 s and 41 s after the first failure, so this deadline was missed by 17 s.
    with running_operator(ray_crds, namespace):
        started = time.monotonic()
        wait_for("cluster deleted", lambda: _gone(client, namespace, "nocontainers"), timeout=60)
        elapsed = time.monotonic() - started
    assert elapsed < CANNOT_BUILD_DEADLINE + 10, elapsed
    notes = [e.get("note", "") for e in events(client, namespace, "FailedToCreateRedisCleanupJob")]
    assert any("a pod template has no containers" in note for note in notes), notes
    recorded(client, namespace, "ForceDeletedStuckCluster", "nocontainers")


def test_a_pass_on_a_stale_cache_makes_no_cleanup_job_for_a_cluster_already_gone(
    ray_crds: LocalCluster, client: KubeClient, namespace: str
) -> None:
    # CI saw two cleanup Jobs for one cluster: a pass had removed the finalizer, the
    # garbage collector took the finished Job with the cluster, and a later pass, its
    # cache still holding the cluster and no longer the Job, made another.
    client.create(_ft_cluster("stale", namespace))
    client.delete(RAY_CLUSTER, "stale", namespace)
    held = get_cluster(client, namespace, "stale")  # what the lagging cache still shows
    client.patch(RAY_CLUSTER, "stale", namespace, {"metadata": {"finalizers": None}})
    wait_for("cluster deleted", lambda: _gone(client, namespace, "stale"))
    tools = cluster_tools(client, ListSink(), clock=SystemClock())  # no pod, no Job cached
    result = finish_deletion(tools, ObjectKey(namespace, "stale"), held)
    assert result.requeue_after is None, result
    assert client.list(JOB, namespace)["items"] == []
