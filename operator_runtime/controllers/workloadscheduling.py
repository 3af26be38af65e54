"""The ``KubernetesWAS`` gate's API writes: a RayCluster's Workload and PodGroup before its
pods, replaced when the gang's size changes, removed when the cluster stops wanting one.
What they contain, and which found object is out of date, is
``render/workloadscheduling.py``.

Both objects are immutable, so a pass never updates them: it deletes what is stale, in
dependency order (the PodGroup, then the Workload its template lives in), each with a
UID precondition so a namesake made meanwhile is never hit, and fails with a
``TemporaryError`` that says what it waits for. The retried pass sees the deletion in the
caches and goes on; the pass after the Workload is gone makes both again. As in KubeRay
v1.7.0, a pass that finds a same-named object controlled by someone else fails (and is
retried) rather than adopt it or fight its owner.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Final, cast

from operator_runtime.api import RayCluster
from operator_runtime.controllers.finalizers import finalizers, set_finalizer
from operator_runtime.render import Permission
from operator_runtime.render.workloadscheduling import (
    GATE,
    POD_GROUP_PROTECTION_FINALIZER,
    build_pod_group,
    build_workload,
    pod_group_name,
    pod_group_stale,
    skip_reason,
    workload_stale,
)
from operator_runtime.runtime.cache import Cache
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.configuration import ConfigurationError
from operator_runtime.runtime.errors import AlreadyExists, NotFound, TemporaryError
from operator_runtime.runtime.kinds import WORKLOAD, WORKLOAD_POD_GROUP, Object, being_deleted
from operator_runtime.runtime.reconcile import controlled_by

log = logging.getLogger(__name__)

KINDS: Final = (WORKLOAD, WORKLOAD_POD_GROUP)
"""What the gate's scheduler writes; the RayCluster controller caches and watches both
(KubeRay's reconciler ``Owns`` them), so a pass costs no GET and a deletion wakes it."""


def require_served(client: KubeClient) -> None:
    """Refuse to start when ``scheduling.k8s.io/v1alpha2`` Workloads or PodGroups are not
    served: their informers would never sync and no controller would start (KubeRay's
    manager exits then too, as no provider's API version is available)."""
    for kind in KINDS:
        if not client.serves(kind.api_version, kind.plural):
            raise ConfigurationError(
                f"the {GATE} feature gate: the API server does not serve {kind.plural} of "
                f"{kind.api_version}; it needs Kubernetes 1.36 or later with "
                f"--runtime-config={kind.api_version}=true and the GenericWorkload feature "
                "gate (the scheduler also GangScheduling)"
            )


def needs(controller: str) -> tuple[Permission, ...]:
    """Read through informers, made, deleted when stale; a PodGroup is also patched, to
    take Kubernetes' protection finalizer off before it is deleted. Only with the gate."""
    group, reads = "scheduling.k8s.io", ("list", "watch")
    return (
        Permission(controller, group, ("workloads",), (*reads, "create", "delete"),
                   "the gang's Workload (informer cache)", GATE),
        Permission(controller, group, ("podgroups",), (*reads, "create", "patch", "delete"),
                   "the gang's PodGroup (informer cache; its finalizer taken off)", GATE),
    )  # fmt: skip


@dataclass(frozen=True, slots=True)
class SchedulingCaches:
    workloads: Cache
    pod_groups: Cache


def on_submission(client: KubeClient, caches: SchedulingCaches, cluster: RayCluster) -> None:
    """Before a RayCluster's pods: its Workload and PodGroup as they should be now, or,
    for a cluster that wants no gang, none of ours left. Raises ``TemporaryError`` while
    a deletion it started (or found) has not finished, or on a namesake not ours."""
    reason = skip_reason(cluster)
    if reason:
        log.debug("%s: no workload-aware scheduling (%s)", _key(cluster), reason)
        cleanup(client, caches, cluster)
        return
    _sync_workload(client, caches, cluster)
    _sync_pod_group(client, caches, cluster)


def _key(cluster: RayCluster) -> str:
    return f"{cluster.metadata.namespace or 'default'}/{cluster.metadata.name}"


def _ours(found: Object | None, cluster: RayCluster) -> bool:
    return found is not None and controlled_by(found, cluster.metadata.uid or "")


def _refuse_namesake(kind: str, found: Object, cluster: RayCluster) -> None:
    if not _ours(found, cluster):
        name = f"{found['metadata'].get('namespace')}/{found['metadata']['name']}"
        raise TemporaryError(
            f"{kind} {name} already exists and is not owned by this RayCluster; rename it "
            "or use a different RayCluster name to avoid the collision"
        )


def _create(client: KubeClient, desired: Object) -> None:
    try:
        client.create(desired)
    except AlreadyExists:  # the cache has not shown it yet; the next pass looks at it
        meta = desired["metadata"]
        log.info("%s %s/%s already exists", desired["kind"], meta["namespace"], meta["name"])


def _sync_workload(client: KubeClient, caches: SchedulingCaches, cluster: RayCluster) -> None:
    desired = build_workload(cluster)
    namespace, name = _key(cluster).split("/", 1)
    found = caches.workloads.get(namespace, name)
    if found is None:
        _create(client, cast(Object, desired))
        return
    _refuse_namesake("Workload", found, cluster)
    if being_deleted(found):
        raise TemporaryError(f"Workload {namespace}/{name} is being deleted, will retry")
    if not workload_stale(found, desired):
        return
    pod_group = caches.pod_groups.get(namespace, pod_group_name(name))
    if pod_group is not None and _ours(pod_group, cluster):
        delete_pod_group(client, pod_group)
        raise TemporaryError(
            f"deleted PodGroup {namespace}/{pod_group_name(name)} before replacing stale "
            f"Workload {namespace}/{name}, will retry after deletion completes"
        )
    _delete(client, found)
    raise TemporaryError(
        f"deleted stale Workload {namespace}/{name}, will retry after deletion completes"
    )


def _sync_pod_group(client: KubeClient, caches: SchedulingCaches, cluster: RayCluster) -> None:
    desired = build_pod_group(cluster)
    namespace, cluster_name = _key(cluster).split("/", 1)
    name = pod_group_name(cluster_name)
    found = caches.pod_groups.get(namespace, name)
    if found is None:
        _create(client, cast(Object, desired))
        return
    _refuse_namesake("PodGroup", found, cluster)
    if being_deleted(found):
        delete_pod_group(client, found)
        raise TemporaryError(f"PodGroup {namespace}/{name} is being deleted, will retry")
    if not pod_group_stale(found, desired):
        return
    delete_pod_group(client, found)
    raise TemporaryError(
        f"deleted stale PodGroup {namespace}/{name}, will retry after deletion completes"
    )


def delete_pod_group(client: KubeClient, found: Object) -> bool:
    """Take Kubernetes' protection finalizer off (the pods naming the group may outlive
    it), then delete it unless it is already going; other finalizers are kept. True when
    it wrote."""
    wrote = False
    if POD_GROUP_PROTECTION_FINALIZER in finalizers(found):
        try:
            set_finalizer(client, WORKLOAD_POD_GROUP, found, POD_GROUP_PROTECTION_FINALIZER,
                          present=False)  # fmt: skip
        except NotFound:
            return True
        wrote = True
    if being_deleted(found):
        return wrote
    return _delete(client, found) or wrote


def _delete(client: KubeClient, found: Object) -> bool:
    """Delete ``found`` itself (its UID as a precondition); False when it was gone."""
    meta = found["metadata"]
    kind = WORKLOAD if found.get("kind") == "Workload" else WORKLOAD_POD_GROUP
    try:
        client.delete(kind, meta["name"], meta.get("namespace"), uid=meta.get("uid"))
    except NotFound:
        return False
    return True


def cleanup(client: KubeClient, caches: SchedulingCaches, cluster: RayCluster) -> bool:
    """Remove our PodGroup, then (once it is gone) our Workload; a namesake of someone
    else's is left alone. True when it wrote. Raises ``TemporaryError`` while the
    PodGroup's deletion has not finished (the Workload must outlive it)."""
    namespace, name = _key(cluster).split("/", 1)
    pod_group = caches.pod_groups.get(namespace, pod_group_name(name))
    if pod_group is not None and _ours(pod_group, cluster):
        delete_pod_group(client, pod_group)
        raise TemporaryError(
            f"waiting for PodGroup {namespace}/{pod_group_name(name)} to finish deleting"
        )
    workload = caches.workloads.get(namespace, name)
    if workload is None or not _ours(workload, cluster):
        return False
    if being_deleted(workload):
        raise TemporaryError(f"Workload {namespace}/{name} is being deleted, will retry")
    return _delete(client, workload)
