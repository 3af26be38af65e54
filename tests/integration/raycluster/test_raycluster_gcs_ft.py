"""GCS fault tolerance (Redis): the cleanup finalizer and Job on deletion."""

from __future__ import annotations

import time
from typing import Any

from operator_runtime.api.finalizers import Finalizer
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.errors import NotFound
from operator_runtime.runtime.kinds import JOB, NODE, POD, RAY_CLUSTER
from tests.integration.raycluster.conftest import (
    RunningOperator,
    events,
    get_cluster,
    live_pods,
    pods,
    raycluster,
    recorded,
    running_ready,
)
from tests.integration.raycluster.watches import event_log
from tests.waiting import wait_for

FINALIZER = Finalizer.GCS_FT_REDIS_CLEANUP.value
FT = {"gcsFaultToleranceOptions": {"redisAddress": "redis.example:6379"}}


def _gone(client: KubeClient, namespace: str, name: str) -> bool:
    try:
        get_cluster(client, namespace, name)
    except NotFound:
        return True
    return False


def _cleanup_jobs(client: KubeClient, namespace: str, name: str) -> list[dict[str, Any]]:
    selector = f"ray.io/cluster={name},ray.io/node-type=redis-cleanup"
    jobs: list[dict[str, Any]] = client.list(JOB, namespace, label_selector=selector)["items"]
    return jobs


def _with_finalizer(client: KubeClient, namespace: str, name: str) -> bool:
    return FINALIZER in (get_cluster(client, namespace, name)["metadata"].get("finalizers") or ())


def test_cleanup_job_runs_after_the_head_is_gone_then_the_finalizer_goes(
    operator: RunningOperator, client: KubeClient, namespace: str
) -> None:
    client.create(raycluster("ft", namespace, workers=1, **FT))
    wait_for("finalizer", lambda: _with_finalizer(client, namespace, "ft"))
    wait_for(
        "pods ready",
        lambda: len([p for p in live_pods(client, namespace, "ft") if running_ready(p)]) == 2,
        timeout=60,
    )
    heads = event_log(client, POD, namespace, "ray.io/cluster=ft,ray.io/node-type=head")
    jobs = event_log(client, JOB, namespace, "ray.io/cluster=ft,ray.io/node-type=redis-cleanup")
    with heads as head_events, jobs as job_events:
        client.delete(RAY_CLUSTER, "ft", namespace)
        wait_for("cluster deleted", lambda: _gone(client, namespace, "ft"), timeout=60)
        head_gone, job_created = head_events.first("DELETED"), job_events.first("ADDED")
    assert head_gone is not None and job_created is not None
    # resourceVersions come from one etcd: they order the two events exactly.
    assert head_gone < job_created, "the cleanup Job started while the head pod existed"
    job = _cleanup_jobs(client, namespace, "ft")
    # The Job is owned by the cluster, so the garbage collector takes it away too.
    assert not job or any(c["type"] == "Complete" for c in job[0]["status"].get("conditions", []))
    recorded(client, namespace, "CreatedRedisCleanupJob", "ft")


def _unschedulable(name: str, namespace: str, **extra: Any) -> dict[str, Any]:
    """Head (and so cleanup Job) pods that never get a node: the Job never finishes
    on its own."""
    manifest = raycluster(name, namespace, workers=0, **FT, **extra)
    manifest["spec"]["headGroupSpec"]["template"]["spec"]["nodeSelector"] = {"nowhere": "true"}
    return manifest


def test_a_failed_cleanup_job_removes_the_finalizer_with_a_warning(
    operator: RunningOperator, client: KubeClient, namespace: str
) -> None:
    client.create(_unschedulable("ftfail", namespace))
    wait_for("finalizer", lambda: _with_finalizer(client, namespace, "ftfail"))
    wait_for("head pod", lambda: live_pods(client, namespace, "ftfail", "head"))
    client.delete(RAY_CLUSTER, "ftfail", namespace)
    selector = "ray.io/cluster=ftfail,ray.io/node-type=redis-cleanup"
    job_pod = wait_for("cleanup Job pod", lambda: pods(client, namespace, selector), timeout=30)[0]
    client.patch(
        POD,
        job_pod["metadata"]["name"],
        namespace,
        {"status": {"phase": "Failed"}},
        subresource="status",
    )
    wait_for("cluster deleted", lambda: _gone(client, namespace, "ftfail"), timeout=30)
    warning = wait_for("warning", lambda: events(client, namespace, "RedisCleanupJobFailed"))
    assert warning[0]["type"] == "Warning"


def test_the_deletion_deadline_removes_the_finalizer_even_if_the_head_never_goes(
    operator: RunningOperator, client: KubeClient, namespace: str
) -> None:
    # A node without a kubelet: a pod bound to it never finishes terminating.
    node = f"held-{namespace}"
    client.create(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": node},
            "spec": {"taints": [{"key": "test/held", "effect": "NoSchedule"}]},
        }
    )
    ft = {"gcsFaultToleranceOptions": {**FT["gcsFaultToleranceOptions"],
                                       "externalStorageNamespace": "ftstuck-storage"}}  # fmt: skip
    manifest = raycluster(
        "ftstuck", namespace, workers=0, **ft, annotations={"ray.io/gcs-ft-deletion-timeout": "3"}
    )
    head_spec = manifest["spec"]["headGroupSpec"]["template"]["spec"]
    head_spec["nodeName"] = node
    head_spec["tolerations"] = [{"key": "test/held", "operator": "Exists"}]
    try:
        client.create(manifest)
        wait_for("finalizer", lambda: _with_finalizer(client, namespace, "ftstuck"))
        wait_for("head pod", lambda: live_pods(client, namespace, "ftstuck", "head"))
        started = time.monotonic()
        client.delete(RAY_CLUSTER, "ftstuck", namespace)
        wait_for("cluster deleted", lambda: _gone(client, namespace, "ftstuck"), timeout=20)
        elapsed = time.monotonic() - started
        assert 2 <= elapsed < 15, elapsed
        # Still terminating: the deadline, not the head, ended the wait.
        assert pods(client, namespace, "ray.io/cluster=ftstuck,ray.io/node-type=head")
        assert _cleanup_jobs(client, namespace, "ftstuck") == []
        warning = wait_for("warning", lambda: events(client, namespace, "ForceDeletedStuckCluster"))
        assert warning[0]["type"] == "Warning"
        # The namespace the head used, to clean up by hand (KubeRay's names the annotation's).
        assert "'ftstuck-storage'" in warning[0]["note"], warning[0]["note"]
    finally:
        for pod in pods(client, namespace, "ray.io/cluster=ftstuck"):
            client.delete(POD, pod["metadata"]["name"], namespace, grace_period_seconds=0)
        client.delete(NODE, node)
