"""GCS fault tolerance with Redis: delete the cluster's keys from Redis on deletion.

A finalizer holds the RayCluster while its head and workers are deleted (the GCS must
stop writing first) and a cleanup Job empties the storage namespace; when the Job
finishes, successfully or not, the finalizer is removed. A deadline
(``ray.io/gcs-ft-deletion-timeout``, 300 s by default) bounds the whole wait, so a
deletion never hangs on a Job or a pod that cannot finish.
"""

from __future__ import annotations

import copy
import datetime
import logging
from typing import Final

import pydantic

from operator_runtime.api import RayCluster
from operator_runtime.api.annotations import AnnotationKey
from operator_runtime.api.finalizers import Finalizer
from operator_runtime.api.labels import LabelKey, NodeType
from operator_runtime.api.reasons import Action, Reason, ReplicaFailure
from operator_runtime.controllers import finalizers
from operator_runtime.controllers.parse_errors import describe_parse_error
from operator_runtime.controllers.raycluster.options import (
    HEAD_TERMINATION_REQUEUE_SECONDS,
    SHORT_REQUEUE_SECONDS,
)
from operator_runtime.controllers.raycluster.podwrites import delete_all
from operator_runtime.controllers.raycluster.run import (
    ClusterRun,
    ClusterTools,
    loose,
    need,
)
from operator_runtime.render import RedisCleanupJobParams, RenderError, build_redis_cleanup_job
from operator_runtime.render.gcsft import (
    deletion_timeout,
    external_storage_namespace,
    redis_cleanup_needed,
)
from operator_runtime.runtime.errors import AlreadyExists, ApiError, NotFound
from operator_runtime.runtime.kinds import RAY_CLUSTER, Object
from operator_runtime.runtime.reconcile import ObjectKey, Result

log = logging.getLogger(__name__)
FINALIZER: Final = Finalizer.GCS_FT_REDIS_CLEANUP.value

GCS_FT_NEEDS: Final = (
    need(
        "ray.io",
        "rayclusters",
        ("get", "patch"),
        "add and remove the Redis cleanup finalizer; a live read before the cleanup Job",
    ),
    need("batch", "jobs", ("list", "watch", "create"), "the Redis cleanup Job"),
)


def set_finalizer(run: ClusterRun, present: bool) -> None:
    """Add or remove the finalizer; conditional on resourceVersion, so a concurrent
    change to the list is never overwritten (a conflict retries the pass)."""
    _patch_finalizer(run.tools, run.raw, present)


def _patch_finalizer(tools: ClusterTools, raw: Object, present: bool) -> None:
    finalizers.set_finalizer(tools.client, RAY_CLUSTER, raw, FINALIZER, present=present)


def holds_deletion(raw: Object) -> bool:
    """Being deleted with our finalizer still on: only ``finish_deletion`` may run."""
    deleting = bool(raw["metadata"].get("deletionTimestamp"))
    return deleting and FINALIZER in finalizers.finalizers(raw)


def job_outcome(job: Object) -> str:
    """``Complete``, ``Failed`` (FailureTarget counts: it precedes Failed by a while
    when the deadline hits) or "" while it runs."""
    for condition in (job.get("status") or {}).get("conditions") or ():
        if condition.get("status") != "True":
            continue
        if condition.get("type") in ("Complete", "Failed"):
            return str(condition["type"])
        if condition.get("type") == "FailureTarget":
            return "Failed"
    return ""


def gcs_ft_finalizer(run: ClusterRun) -> Result | None:
    """Gate step: add the finalizer to a live cluster with Redis GCS FT. A cluster being
    deleted with the finalizer never gets here (``finish_deletion`` runs instead)."""
    cluster, raw = run.cluster, run.raw
    if raw["metadata"].get("deletionTimestamp"):
        return None
    if not redis_cleanup_needed(cluster, cleanup_enabled=run.tools.options.gcs_ft_redis_cleanup):
        return None
    if FINALIZER in finalizers.finalizers(raw):
        return None
    log.info("%s: GCS FT on; adding finalizer %s", run.key, FINALIZER)
    set_finalizer(run, present=True)
    return Result(requeue_after=SHORT_REQUEUE_SECONDS)


def finish_deletion(tools: ClusterTools, key: ObjectKey, raw: Object) -> Result:
    """A cluster being deleted while our finalizer holds it. Runs before anything else
    of the pass (parsing, validation), so a deletion always ends: at the latest when
    ``ray.io/gcs-ft-deletion-timeout`` has passed, whatever is wrong with the object,
    and at once when there is nothing to clean up (cleanup disabled by
    ``ENABLE_GCS_FT_REDIS_CLEANUP=false``, GCS FT removed from the spec, RocksDB)."""
    metadata = raw["metadata"]
    started = datetime.datetime.fromisoformat(str(metadata["deletionTimestamp"]))
    timeout = deletion_timeout(metadata.get("annotations") or {})
    left = timeout - (tools.clock.now() - started).total_seconds()
    if left <= 0:
        _give_up(tools, raw, timeout)
        return Result()
    try:
        cluster = RayCluster.model_validate(raw)
    except pydantic.ValidationError as exc:
        tools.events.record(
            raw,
            "Warning",
            Reason.INVALID_SPEC.value,
            f"The RayCluster cannot be read, so its Redis storage cannot be cleaned up; "
            f"the finalizer is removed {timeout:.0f}s after the deletion request: "
            f"{describe_parse_error(exc)}",
            Action.CLEANUP.value,
        )
        return Result(requeue_after=left)
    if not redis_cleanup_needed(cluster, cleanup_enabled=tools.options.gcs_ft_redis_cleanup):
        log.info("%s: nothing to clean up in Redis; removing finalizer %s", key, FINALIZER)
        _patch_finalizer(tools, raw, present=False)
        return Result()
    run = ClusterRun(tools, key, raw, cluster)
    # Nothing may leave this function as an exception: the manager's backoff (5 ms
    # doubling to 1000 s) would outgrow the deadline, and a PermanentError is never
    # retried at all. Look again soon, and at the latest when the deadline is up.
    retry = Result(requeue_after=min(SHORT_REQUEUE_SECONDS, left))
    try:
        return _cleanup(run, left)
    except (ApiError, RenderError) as exc:
        log.warning("%s: Redis cleanup step failed (%s); retrying", key, exc)
    except Exception:
        log.exception("%s: Redis cleanup step raised; retrying", key)
    return retry


def _cleanup(run: ClusterRun, left: float) -> Result:
    pods = run.ray_pods()
    delete_all(
        run,
        pods,
        why="Redis cleanup before deletion",
        failed=Reason.FAILED_TO_DELETE_POD_COLLECTION,
        marker=ReplicaFailure.DELETE_ALL_PODS,
    )
    if run.head_pods():
        # The GCS may still write to Redis until the head is gone.
        return Result(requeue_after=min(HEAD_TERMINATION_REQUEUE_SECONDS, left))
    jobs = [
        j
        for j in run.tools.caches.jobs.list(run.namespace)
        if (j["metadata"].get("labels") or {}).get(LabelKey.CLUSTER) == run.name
        and (j["metadata"].get("labels") or {}).get(LabelKey.NODE_TYPE) == NodeType.REDIS_CLEANUP
    ]
    if not jobs:
        if not _still_held(run):
            return Result()
        _create_job(run)
        return Result(requeue_after=min(SHORT_REQUEUE_SECONDS, left))
    job = jobs[0]
    outcome = job_outcome(job)
    if not outcome:
        return Result(requeue_after=min(SHORT_REQUEUE_SECONDS, left))
    set_finalizer(run, present=False)
    if outcome == "Failed":
        run.event(
            "Warning",
            Reason.REDIS_CLEANUP_JOB_FAILED,
            f"Redis cleanup Job {run.namespace}/{job['metadata']['name']} failed; the "
            f"Redis storage namespace {external_storage_namespace(run.cluster)!r} may need manual "
            "cleanup (see https://docs.ray.io/en/master/cluster/kubernetes/user-guides/"
            "kuberay-gcs-ft.html)",
            Action.CLEANUP,
        )
    return Result()


def _still_held(run: ClusterRun) -> bool:
    """Whether the API server still has this cluster held by our finalizer. The cache
    may lag behind a pass that already removed it: the cluster is then gone, and the
    garbage collector has taken its finished Job, so a pass reading the cache alone
    would create a second Job for nothing (seen in CI). One GET per Job created."""
    try:
        live = run.tools.client.get(RAY_CLUSTER, run.name, run.namespace)
    except NotFound:
        return False
    return live["metadata"].get("uid") == run.uid and holds_deletion(live)


def _give_up(tools: ClusterTools, raw: Object, timeout: float) -> None:
    _patch_finalizer(tools, raw, present=False)
    tools.events.record(
        raw,
        "Warning",
        Reason.FORCE_DELETED_STUCK_CLUSTER.value,
        f"Force-removed GCS FT finalizer after {timeout:.0f}s due to Redis cleanup "
        f"timeout; Redis storage namespace {_raw_storage_namespace(raw)!r} may need manual "
        "cleanup",
        Action.CLEANUP.value,
    )


def _raw_storage_namespace(raw: Object) -> str:
    """``render.gcsft.external_storage_namespace`` read from the unparsed object (the
    deadline holds whatever is wrong with it): the options' value, else the annotation,
    else the UID."""
    options = (raw.get("spec") or {}).get("gcsFaultToleranceOptions")
    if isinstance(options, dict) and options.get("externalStorageNamespace"):
        return str(options["externalStorageNamespace"])
    annotations = raw["metadata"].get("annotations") or {}
    return str(
        annotations.get(AnnotationKey.EXTERNAL_STORAGE_NAMESPACE, raw["metadata"].get("uid", ""))
    )


def _create_job(run: ClusterRun) -> None:
    options = run.tools.options
    try:
        built = build_redis_cleanup_job(params=RedisCleanupJobParams(run.cluster, options.render))
    except RenderError as exc:
        # The Job is built from the head's template, which nothing validated on the way
        # here (the deletion path skips validation so that it always ends).
        run.event(
            "Warning",
            Reason.FAILED_TO_CREATE_REDIS_CLEANUP_JOB,
            f"Cannot build the Redis cleanup Job of {run.namespace}/{run.name}: {exc}",
            Action.CREATE,
        )
        raise
    job = loose(built)
    container = job["spec"]["template"]["spec"]["containers"][0]
    container["resources"] = copy.deepcopy(options.redis_cleanup_resources)
    name = f"{run.namespace}/{job['metadata']['name']}"
    try:
        run.tools.client.create(job)
    except AlreadyExists:
        return
    except ApiError as exc:
        run.event(
            "Warning",
            Reason.FAILED_TO_CREATE_REDIS_CLEANUP_JOB,
            f"Failed to create Redis cleanup Job {name}, {exc}",
            Action.CREATE,
        )
        raise
    run.event(
        "Normal",
        Reason.CREATED_REDIS_CLEANUP_JOB,
        f"Created Redis cleanup Job {name}",
        Action.CREATE,
    )
