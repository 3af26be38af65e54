"""The batch scheduler's API writes: the gang's PodGroup before a RayCluster's pods (or in
a RayJob's Initializing step), and a finished or suspended RayJob's group shrunk so its
reservation is released (KubeRay's ``DoBatchSchedulingOnSubmission`` and
``CleanupOnCompletion``). What the PodGroups contain is ``render/batchscheduler.py``.

Only Volcano and scheduler-plugins have a PodGroup of ours; YuniKorn and KAI read the
pods' labels and annotations alone, so for them submission only refuses what KubeRay
refuses.
"""

from __future__ import annotations

import copy
import logging
from typing import Final

from operator_runtime.api import RayCluster, RayJob
from operator_runtime.render import Permission
from operator_runtime.render.batchscheduler import (
    SCHEDULER_PLUGINS,
    VOLCANO,
    BatchSchedulerError,
    Parent,
    build_plugins_pod_group,
    build_volcano_pod_group,
    gang_scheduling_enabled,
    refuse_on_submission,
    volcano_cluster_gang,
    volcano_pod_group_for,
)
from operator_runtime.render.permission import batch_scheduler_flag
from operator_runtime.render.resources import Amount, amount
from operator_runtime.runtime.cache import Cache
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.configuration import ConfigurationError
from operator_runtime.runtime.errors import AlreadyExists, TemporaryError
from operator_runtime.runtime.kinds import (
    PLUGINS_POD_GROUP,
    VOLCANO_POD_GROUP,
    Object,
    ResourceKind,
    being_deleted,
)

log = logging.getLogger(__name__)

POD_GROUP_KINDS: Final[dict[str, ResourceKind]] = {
    VOLCANO: VOLCANO_POD_GROUP,
    SCHEDULER_PLUGINS: PLUGINS_POD_GROUP,
}
"""The schedulers that have PodGroups of ours, and their kind: the controllers read them
through an informer (KubeRay's cached client does the same), so a pass costs no GET and
a group deleted by hand is made again at once (its event wakes the owner)."""


def pod_group_kind(scheduler: str) -> ResourceKind | None:
    return POD_GROUP_KINDS.get(scheduler)


def require_served(client: KubeClient, scheduler: str, kind: ResourceKind) -> None:
    """Refuse to start when the scheduler's PodGroup kind is not served: its informer
    would never sync, and no controller would start (KubeRay's manager exits then too)."""
    if not client.serves(kind.api_version, kind.plural):
        raise ConfigurationError(
            f"--batch-scheduler={scheduler}: the API server does not serve {kind.plural} "
            f"of {kind.api_version}; install {scheduler}'s CRDs first"
        )


def needs(controller: str) -> tuple[Permission, ...]:
    """The PodGroups a controller writes, each only with its scheduler: Volcano's are
    created and resized (a RayCluster's and a RayJob's), scheduler-plugins' only
    created, for RayClusters; both read through an informer."""
    volcano, plugins = batch_scheduler_flag(VOLCANO), batch_scheduler_flag(SCHEDULER_PLUGINS)
    rows = [
        Permission(controller, "scheduling.volcano.sh", ("podgroups",),
                   ("get", "list", "watch", "create", "update"),
                   "the gang's Volcano PodGroup (informer cache)", volcano),
    ]  # fmt: skip
    if controller == "raycluster":
        rows.append(
            Permission(controller, "scheduling.x-k8s.io", ("podgroups",),
                       ("get", "list", "watch", "create"),
                       "the gang's scheduler-plugins PodGroup (informer cache)", plugins)
        )  # fmt: skip
    return tuple(rows)


def on_submission(
    client: KubeClient, pod_groups: Cache | None, scheduler: str, owner: Parent
) -> None:
    """Before a RayCluster's pods, or a RayJob's cluster: make the gang's PodGroup
    (``pod_groups``: the scheduler's PodGroup cache; None for a scheduler without them).
    A refusal raises ``TemporaryError``: the pass fails and is retried, as in KubeRay."""
    try:
        refuse_on_submission(scheduler, owner)
        if scheduler == VOLCANO:
            desired = volcano_pod_group_for(owner)
            if desired is not None:
                sync_volcano_pod_group(client, _present(pod_groups, scheduler), desired)
        elif scheduler == SCHEDULER_PLUGINS:
            assert isinstance(owner, RayCluster)  # refused above otherwise
            if gang_scheduling_enabled(owner):
                _ensure_plugins_pod_group(client, _present(pod_groups, scheduler), owner)
    except BatchSchedulerError as exc:
        raise TemporaryError(str(exc)) from None


def _present(pod_groups: Cache | None, scheduler: str) -> Cache:
    if pod_groups is None:  # the controller builds the cache whenever the scheduler has one
        raise AssertionError(f"no PodGroup cache for --batch-scheduler={scheduler}")
    return pod_groups


def sync_volcano_pod_group(client: KubeClient, pod_groups: Cache, desired: Object) -> bool:
    """Create the group, or bring its ``minMember``/``minResources`` to ``desired`` (only
    those: Volcano owns the rest). True when it wrote. A cache that lags gives an
    AlreadyExists or a conflict, and the pass is retried."""
    meta = desired["metadata"]
    cached = pod_groups.get(meta["namespace"], meta["name"])
    if cached is None:
        try:
            client.create(desired)
        except AlreadyExists:
            log.info("PodGroup %s/%s already exists", meta["namespace"], meta["name"])
            return False
        return True
    found = copy.deepcopy(cached)  # the cache's object is shared: never written in place
    spec = found.setdefault("spec", {})
    wanted = desired["spec"]
    if spec.get("minMember", 0) == wanted["minMember"] and _same_quantities(
        spec.get("minResources"), wanted["minResources"]
    ):
        return False
    spec["minMember"] = wanted["minMember"]
    spec["minResources"] = wanted["minResources"]
    client.update(found)
    return True


def _same_quantities(current: object, wanted: dict[str, str]) -> bool:
    """quotav1.Equals: the same names, each the same amount however it is written; a
    group without minResources always differs."""
    if not isinstance(current, dict) or set(current) != set(wanted):
        return False
    parsed = {name: amount(value) for name, value in current.items()}
    return all(
        (have := parsed[name]) is not None and (want := amount(value)) is not None
        and have.value == want.value
        for name, value in wanted.items()
    )  # fmt: skip


def _ensure_plugins_pod_group(client: KubeClient, pod_groups: Cache, cluster: RayCluster) -> None:
    """scheduler-plugins' group is created once and never updated (as KubeRay)."""
    namespace = cluster.metadata.namespace or "default"
    if pod_groups.get(namespace, cluster.metadata.name or "") is not None:
        return
    try:
        client.create(build_plugins_pod_group(cluster))
    except AlreadyExists:
        return


def cleanup_on_completion(
    client: KubeClient,
    caches: tuple[Cache | None, Cache],
    scheduler: str,
    job: RayJob,
    cluster_name: str,
    *,
    cluster_gone: bool = False,
) -> bool:
    """A RayJob that finished, or is suspended or retried: Volcano's group shrinks to what
    its cluster still holds (nothing once the cluster is gone), so the queue's share is
    released. Only Volcano keeps anything; True when the group was written. ``caches``:
    the PodGroups and the RayClusters. ``cluster_gone``: the server said the cluster is
    gone (a DELETE answered NotFound); the RayCluster cache may not have caught up, and
    a cluster it still holds must not put the gang back."""
    if scheduler != VOLCANO or job.spec.cluster_selector or not cluster_name:
        return False
    namespace = job.metadata.namespace or "default"
    members = 0
    resources: dict[str, Amount] = {}
    pod_groups, clusters = caches
    cluster = None if cluster_gone else clusters.get(namespace, cluster_name)
    if cluster is None:
        log.info("RayCluster %s/%s not found; its RayJob's PodGroup goes to zero",
                 namespace, cluster_name)  # fmt: skip
    elif not being_deleted(cluster):
        members, resources = volcano_cluster_gang(RayCluster.model_validate(cluster).spec)
    desired = build_volcano_pod_group(job, min_member=members, min_resources=resources)
    return sync_volcano_pod_group(client, _present(pod_groups, scheduler), desired)
