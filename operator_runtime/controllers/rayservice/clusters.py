"""The RayService's RayClusters: which exist, which are due for deletion, which to
create or update in place, and whether the goal spec needs a new one (KubeRay §5.3).

A cluster is this RayService's when it carries the association labels
(``ray.io/originated-from-cr-name``/``-crd``) and the RayService is its controller
owner. One that is neither active nor pending is *dangling*: it is deleted
``rayClusterDeletionDelaySeconds`` after it was first seen so. The due time is written
on the cluster itself (``pulumi-ray.io/delete-after``), so an operator restart during
the delay still deletes it on time; KubeRay keeps it in memory and forgets it
(ray-project/kuberay#5088), leaving old clusters behind.
"""

from __future__ import annotations

import datetime
import logging
from typing import Final

from operator_runtime.api.annotations import AnnotationKey
from operator_runtime.api.labels import LabelKey
from operator_runtime.api.rayservice import ROLLBACK_IN_PROGRESS, UPGRADE_IN_PROGRESS
from operator_runtime.api.reasons import Action
from operator_runtime.controllers.rayservice.options import DELETE_AFTER_ANNOTATION
from operator_runtime.controllers.rayservice.run import (
    ACTIVE,
    PENDING,
    ServiceRun,
    need,
)
from operator_runtime.render import (
    build_rayservice_cluster,
    partial_hash_matches,
)
from operator_runtime.render.rayservice_upgrade import (
    cluster_update,
    deletion_delay,
    new_cluster_allowed,
)
from operator_runtime.runtime import kinds
from operator_runtime.runtime.cache import Cache
from operator_runtime.runtime.clock import format_time, later, parse_time
from operator_runtime.runtime.errors import AlreadyExists, ApiError, NotFound, TemporaryError
from operator_runtime.runtime.kinds import Object
from operator_runtime.runtime.reconcile import controlled_by

log = logging.getLogger(__name__)
CRD_VALUE: Final = "RayService"

NEEDS: Final = (
    need(
        "ray.io",
        "rayclusters",
        ("get", "create", "update", "patch", "delete"),
        "the RayService's clusters; patch stamps a dangling one's deletion time",
    ),
)


def owned(run: ServiceRun, cache: Cache) -> list[Object]:
    """The objects of ``cache`` this RayService made: its association labels and it as
    their controller owner."""
    uid = str(run.raw["metadata"].get("uid") or "")
    found = []
    for item in cache.list(run.namespace):
        labels = (item.get("metadata") or {}).get("labels") or {}
        if (
            labels.get(LabelKey.ORIGINATED_FROM_CR_NAME) == run.name
            and labels.get(LabelKey.ORIGINATED_FROM_CRD) == CRD_VALUE
            and controlled_by(item, uid)
        ):
            found.append(item)
    return found


def owned_clusters(run: ServiceRun) -> list[Object]:
    """This RayService's clusters, from the cache."""
    return owned(run, run.tools.caches.clusters)


def clean_up_dangling(run: ServiceRun) -> bool:
    """Delete the dangling clusters that are due; True while any dangling one remains."""
    deleting = bool(run.raw["metadata"].get("deletionTimestamp"))
    keep = {run.cluster_name(ACTIVE), run.cluster_name(PENDING)} - {""}
    delay = deletion_delay(run.service)
    remaining = False
    for cluster in owned_clusters(run):
        metadata = cluster["metadata"]
        name = str(metadata["name"])
        if not deleting and name in keep:
            continue
        remaining = True
        if metadata.get("deletionTimestamp"):
            continue
        due = _due(cluster)
        if not deleting and due is None:
            _stamp(run, cluster, later(run.now(), delay))
            continue
        if deleting or (due is not None and run.now() >= due):
            _delete(run, name)
    return remaining


def _due(cluster: Object) -> datetime.datetime | None:
    value = ((cluster.get("metadata") or {}).get("annotations") or {}).get(DELETE_AFTER_ANNOTATION)
    if not value:
        return None
    try:
        return parse_time(str(value))
    except ValueError:
        return None  # not ours to trust: stamp it again


def _stamp(run: ServiceRun, cluster: Object, due: datetime.datetime) -> None:
    name = str(cluster["metadata"]["name"])
    log.info(
        "%s: RayCluster %s is no longer active or pending; deleting it at %s",
        run.key,
        name,
        format_time(due),
    )
    patch = {"metadata": {"annotations": {DELETE_AFTER_ANNOTATION: format_time(due)}}}
    try:
        run.tools.client.patch(kinds.RAY_CLUSTER, name, run.namespace, patch)
    except NotFound:
        return


def _delete(run: ServiceRun, name: str) -> None:
    try:
        run.tools.client.delete(kinds.RAY_CLUSTER, name, run.namespace)
    except NotFound:
        return
    except ApiError as exc:
        run.event(
            "Warning",
            "FailedToDeleteRayCluster",
            f"Failed to delete the RayCluster {run.namespace}/{name}: {exc}",
            Action.DELETE,
        )
        raise
    run.event(
        "Normal",
        "DeletedRayCluster",
        f"Deleted the RayCluster {run.namespace}/{name}",
        Action.DELETE,
    )


def _get(run: ServiceRun, name: str) -> Object | None:
    if not name:
        return None
    return run.cluster(name) or run.tools.client.find(kinds.RAY_CLUSTER, name, run.namespace)


def reconcile_clusters(run: ServiceRun) -> tuple[Object | None, Object | None]:
    """The active and pending clusters, after creating a missing pending one and
    updating either in place where the goal spec allows it."""
    active = _get(run, run.cluster_name(ACTIVE))
    pending_name = run.cluster_name(PENDING)
    # The cache only: a pending cluster it has not seen is created, and the create's
    # AlreadyExists reads it when the cache was behind (a GET first cost one request per
    # RayService's new cluster; KubeRay reads its cache only).
    pending = run.cluster(pending_name)
    if pending_name and pending is None:
        return active, _create(run, pending_name)
    if active is not None and _should_update(run, active, is_active=True):
        active = _update(run, active, "active")
    if pending is not None and _should_update(run, pending, is_active=False):
        pending = _update(run, pending, "pending")
    if active is not None:
        active = _lift_suspend(run, active, "active")
    if pending is not None:
        pending = _lift_suspend(run, pending, "pending")
    return active, pending


def _lift_suspend(run: ServiceRun, cluster: Object, which: str) -> Object:
    """Unsuspend a cluster that is suspended while ``rayClusterConfig.suspend`` is not,
    updating it to the goal spec in the same write.

    A cluster gets ``rayClusterConfig.suspend`` when it is created, and KubeRay v1.7.0
    never changes it after (its updates keep the cluster's own). Kueue v0.17.0 queues a
    RayService by that field: the cluster made while the RayService waited starts
    suspended, and when Kueue admits the RayService by setting the field to false, the
    cluster stays suspended with no head pod for good (ray-project/kuberay#4686).
    Admission also writes the flavor's pod labels, annotations, node selector and
    tolerations into ``rayClusterConfig``, which the cluster's pods must carry, so the
    cluster takes the whole goal spec, not only ``suspend: false``: a suspended cluster
    has no pods to keep consistent, and one cluster (not a second, made because the
    first's hash is stale) runs what Kueue admitted. Only this direction: a running
    cluster is suspended by Kueue itself (it suspends the cluster of a RayService it
    evicts) or by the top-level ``spec.suspend``.
    """
    if (
        not (cluster.get("spec") or {}).get("suspend")
        or run.service.spec.ray_cluster_config.suspend
    ):
        return cluster
    return _update(run, cluster, which, unsuspend=True)


SERVE_RECORD: Final = (AnnotationKey.SERVE_CONFIG_HASH.value, AnnotationKey.SERVE_CONFIG.value)
"""What a cluster was given (``serve.given_config``): only a serve config PUT writes
these, never the spec (a user's ``rayClusterConfig`` annotation cannot claim that a
new cluster already runs a config), and an update in place keeps them."""


def _goal(run: ServiceRun, name: str, current: Object | None = None) -> Object:
    incremental_pending = run.incremental and bool(run.cluster_name(ACTIVE))
    goal: Object = dict(
        build_rayservice_cluster(
            service=run.service,
            cluster_name=name,
            options=run.tools.options.render,
            incremental_pending=incremental_pending,
        )
    )
    annotations = {
        k: v
        for k, v in (goal["metadata"].get("annotations") or {}).items()
        if k not in SERVE_RECORD
    }
    kept = ((current or {}).get("metadata") or {}).get("annotations") or {}
    annotations.update({k: kept[k] for k in SERVE_RECORD if k in kept})
    goal["metadata"] = {**goal["metadata"], "annotations": annotations}
    return goal


def _create(run: ServiceRun, name: str) -> Object:
    try:
        created: Object = run.tools.client.create(_goal(run, name))
    except AlreadyExists:
        again = run.tools.client.find(kinds.RAY_CLUSTER, name, run.namespace)
        if again is None:
            raise TemporaryError(f"RayCluster {run.namespace}/{name} exists and is gone") from None
        return again
    except ApiError as exc:
        run.event(
            "Warning",
            "FailedToCreateRayCluster",
            f"Failed to create the RayCluster {run.namespace}/{name}: {exc}",
            Action.CREATE,
        )
        raise
    run.event(
        "Normal",
        "CreatedRayCluster",
        f"Created the RayCluster {run.namespace}/{name}",
        Action.CREATE,
    )
    return created


def _update(run: ServiceRun, current: Object, which: str, *, unsuspend: bool = False) -> Object:
    """Spec, labels and annotations from the goal; the cluster's own ``suspend`` kept
    unless ``unsuspend`` (``_lift_suspend``)."""
    name = str(current["metadata"]["name"])
    goal = _goal(run, name, current)
    spec = dict(goal["spec"])
    if unsuspend:
        spec["suspend"] = False
    elif "suspend" in (current.get("spec") or {}):
        spec["suspend"] = current["spec"]["suspend"]
    else:
        spec.pop("suspend", None)
    metadata = {
        **current["metadata"],
        "labels": goal["metadata"].get("labels") or {},
        "annotations": goal["metadata"].get("annotations") or {},
    }
    done = "Unsuspended and updated" if unsuspend else "Updated"
    try:
        updated: Object = run.tools.client.update({**current, "metadata": metadata, "spec": spec})
    except ApiError as exc:
        run.event(
            "Warning",
            "FailedToUpdateRayCluster",
            f"Failed to update the {which} RayCluster {run.namespace}/{name}: {exc}",
            Action.UPDATE,
        )
        raise
    run.event(
        "Normal",
        "UpdatedRayCluster",
        f"{done} the {which} RayCluster {run.namespace}/{name}",
        Action.UPDATE,
    )
    return updated


def _should_update(run: ServiceRun, cluster: Object, *, is_active: bool) -> bool:
    if is_active:
        if run.is_true(UPGRADE_IN_PROGRESS):
            return False
        # Stamped from the same value by render/rayservice_cluster.py: an active cluster
        # stamped by another operator version is updated in place (KubeRay's rule).
        annotations = cluster["metadata"].get("annotations") or {}
        version = run.tools.options.render.kuberay_version
        if annotations.get(AnnotationKey.KUBERAY_VERSION) != version:
            return True
    if hash_equal(run, cluster):
        return False
    return hash_equal(run, cluster, partial=True)


def cluster_hash(cluster: Object) -> str:
    annotations = (cluster.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(AnnotationKey.HASH_WITHOUT_REPLICAS_AND_WORKERS_TO_DELETE, ""))


def hash_equal(run: ServiceRun, cluster: Object, *, partial: bool = False) -> bool:
    """The cluster runs the goal spec (``partial``: the goal with worker groups only
    added at the end, which an in-place update can apply)."""
    if not partial:
        return cluster_hash(cluster) == run.goal_hash
    return partial_hash_matches(run.cluster_model(cluster), run.service.spec.ray_cluster_config)


def should_prepare_new_cluster(
    run: ServiceRun, active: Object | None, pending: Object | None, pending_serving: bool
) -> bool:
    if pending_serving or run.is_true(ROLLBACK_IN_PROGRESS):
        return False
    if active is None and pending is None:
        return True
    cluster = pending if pending is not None else active
    assert cluster is not None
    goal = run.service.spec.ray_cluster_config
    if cluster_update(run.cluster_model(cluster), goal) != "new-cluster":
        return False
    return zero_downtime(run)


def zero_downtime(run: ServiceRun) -> bool:
    """Whether a changed cluster spec gets a new cluster (else nothing happens)."""
    return new_cluster_allowed(
        run.service.spec.upgrade_strategy,
        run.tools.options.gates,
        zero_downtime=run.tools.options.zero_downtime,
    )
