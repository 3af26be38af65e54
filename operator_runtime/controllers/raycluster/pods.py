"""The pod step, which decides: what pods to create and delete, by podrules.py, via podwrites.py.

In order: suspend, Recreate upgrades, the head pod, then each worker group.

Per worker group (single host), in KubeRay's order:
1. a suspended group loses all its pods;
2. pods that can never run Ray again are deleted, and nothing else happens this pass;
3. ``scaleStrategy.workersToDelete`` pods are deleted;
4. the rest is diffed against the desired count: create the missing pods, or delete
   the surplus, as ``scaledown.py`` ranks it (only without the autoscaler, which
   otherwise decides by itself).
A group whose expectations are not yet met by the cache is skipped entirely.
"""

from __future__ import annotations

import functools
import logging

from operator_runtime.api import WorkerGroupSpec
from operator_runtime.api.annotations import AnnotationKey
from operator_runtime.api.labels import LabelKey, NodeType
from operator_runtime.api.raycluster import PROVISIONED, STATE_READY, SUSPENDED, SUSPENDING
from operator_runtime.api.reasons import Action, Reason, ReplicaFailure
from operator_runtime.controllers import batchscheduler, workloadscheduling
from operator_runtime.controllers.conditions import is_true
from operator_runtime.controllers.raycluster import mtls, multihost, upgrade
from operator_runtime.controllers.raycluster.creates import take_budget
from operator_runtime.controllers.raycluster.podrules import (
    live_pods,
    running_and_ready,
    should_delete_pod,
)
from operator_runtime.controllers.raycluster.podwrites import (
    create_pod,
    create_worker,
    delete_all,
    delete_pod,
    free_replica_indexes,
    held_places,
    satisfied,
)
from operator_runtime.controllers.raycluster.run import ClusterRun
from operator_runtime.controllers.raycluster.scaledown import scale_down_victims
from operator_runtime.controllers.raycluster.status import suspend_status
from operator_runtime.render import PodParams, build_pod, desired_worker_replicas
from operator_runtime.render.gcsft import ft_enabled
from operator_runtime.runtime.errors import NotFound
from operator_runtime.runtime.kinds import POD, RAY_CLUSTER, Object, being_deleted

log = logging.getLogger(__name__)
HEAD = ""
"""The head's expectations group."""


class PodsReplaced(Exception):
    """Unhealthy pods were deleted; nothing is created in the same pass (KubeRay)."""


def reconcile_pods(run: ClusterRun) -> None:
    cluster, options = run.cluster, run.tools.options
    conditions = (run.raw.get("status") or {}).get("conditions") or []
    suspend = suspend_status(conditions)
    gate = options.gates.ray_cluster_status_conditions
    if suspend == SUSPENDING or (not gate and cluster.spec.suspend):
        _delete_for_suspend(run)
        return
    if gate and (suspend == SUSPENDED or cluster.spec.suspend):
        return  # suspended, or Suspending is set first by the status step
    expected_hash = upgrade.spec_hash(cluster.spec)
    if upgrade.recreate_requested(cluster.spec) and _upgrade(run, expected_hash):
        return
    scheduling = run.tools.caches.workload_scheduling
    if scheduling is not None:  # the gang exists before its first pod
        workloadscheduling.on_submission(run.tools.client, scheduling, cluster)
    elif options.render.batch_scheduler:
        batchscheduler.on_submission(
            run.tools.client, run.tools.caches.pod_groups, options.render.batch_scheduler, cluster
        )
    if not _reconcile_head(run, expected_hash):
        return
    for group in cluster.spec.worker_group_specs or ():
        _reconcile_group(run, group)


def _delete_for_suspend(run: ClusterRun) -> None:
    if delete_all(
        run,
        run.ray_pods(),
        why="suspension",
        failed=Reason.FAILED_TO_DELETE_POD_COLLECTION,
        marker=ReplicaFailure.DELETE_ALL_PODS,
    ):
        run.event(
            "Normal",
            Reason.DELETED_POD,
            f"Deleted Pods for RayCluster {run.namespace}/{run.name} due to suspension",
            Action.DELETE,
        )


def _upgrade(run: ClusterRun, expected_hash: str) -> bool:
    """Apply the Recreate strategy; True when the pods are being replaced."""
    version = run.tools.options.render.kuberay_version
    heads = run.head_pods()
    decision = upgrade.decide(heads, expected_hash=expected_hash, operator_version=version)
    if decision is upgrade.Decision.RESTAMP:
        name = heads[0]["metadata"]["name"]
        log.info(
            "%s: head pod %s was created by another operator version; restamping it", run.key, name
        )
        patch = upgrade.restamp_patch(spec_hash_value=expected_hash, operator_version=version)
        run.tools.client.patch(POD, name, run.namespace, patch)
        return False
    if decision is upgrade.Decision.KEEP:
        return False
    pods = run.ray_pods()
    groups = {str(p["metadata"]["name"]): _group_of(p) for p in pods}
    run.tools.expectations.forget_prefix(run.group_key(""))
    if delete_all(
        run,
        pods,
        why="Recreate upgradeStrategy",
        failed=Reason.FAILED_TO_DELETE_POD_COLLECTION,
        marker=ReplicaFailure.DELETE_ALL_PODS,
        group_of=groups,
    ):
        run.event(
            "Normal",
            Reason.DELETED_POD,
            f"Deleted all Pods for RayCluster "
            f"{run.namespace}/{run.name} due to spec change with Recreate "
            "upgradeStrategy",
            Action.DELETE,
        )
    return True


def _group_of(pod: Object) -> str:
    labels = pod["metadata"].get("labels") or {}
    if labels.get(LabelKey.NODE_TYPE) == NodeType.HEAD:
        return HEAD
    return str(labels.get(LabelKey.GROUP, ""))


def _reconcile_head(run: ClusterRun, expected_hash: str) -> bool:
    """False: stop the pod step (a provisioned head that must not be restarted)."""
    if not satisfied(run, HEAD):
        return True
    every = run.head_pods()
    heads = live_pods(every)
    if len(heads) > 1:
        names = sorted(str(p["metadata"]["name"]) for p in heads)
        raise RuntimeError(f"{len(heads)} head pods found {names}; delete the extra ones")
    if heads:
        verdict = should_delete_pod(heads[0], "head")
        if verdict.delete:
            delete_pod(run, heads[0], group=HEAD, head=True, why=verdict.reason)
            raise PodsReplaced(verdict.reason)
        return True
    if len(every) > len(heads) and (why_wait := _terminating_head_blocks(run)):
        log.info(
            "%s: the head pod is terminating; a new one waits until it is gone (%s)",
            run.key,
            why_wait,
        )
        return True
    annotations = run.cluster.metadata.annotations or {}
    conditions = (run.raw.get("status") or {}).get("conditions") or []
    if is_true(conditions, PROVISIONED) and (
        annotations.get(AnnotationKey.DISABLE_PROVISIONED_HEAD_RESTART) == "true"
    ):
        log.info(
            "%s: head pod gone; not recreated (%s)",
            run.key,
            AnnotationKey.DISABLE_PROVISIONED_HEAD_RESTART.value,
        )
        return False
    if not still_there(run):
        return False
    mtls.require_certificates(run)
    pod = build_pod(params=PodParams(cluster=run.cluster, options=run.tools.options.render))
    pod_annotations = pod["metadata"].setdefault("annotations", {})  # type: ignore[union-attr]
    assert isinstance(pod_annotations, dict)
    upgrade.stamp(
        pod_annotations,
        spec_hash_value=expected_hash,
        operator_version=run.tools.options.render.kuberay_version,
    )
    create_pod(run, pod, group=HEAD, head=True)
    run.creates_unseen = True
    return True


def _terminating_head_blocks(run: ClusterRun) -> str:
    """Why a head pod that is still Terminating may not be replaced yet ("" if it may).

    It is replaced, like a worker, unless two heads could clash: a deterministic head
    name is taken until the old pod is gone, and with GCS fault tolerance the old GCS
    may still be writing to the storage the new one recovers from (a pod on a lost node
    is not known to be stopped), so there, as for a StatefulSet, at most one head."""
    if run.tools.options.render.deterministic_head_pod_name:
        return "the deterministic head pod name is still taken"
    if ft_enabled(run.cluster):
        return "with GCS fault tolerance two heads must never share the storage"
    return ""


def _reconcile_group(run: ClusterRun, group: WorkerGroupSpec) -> None:
    name = group.group_name
    key, creates = run.group_key(name), run.tools.creates
    failed = creates.take_failure(key)
    if failed is not None:
        raise failed  # a queued create of an earlier pass failed: this pass reports it
    creates.prune(key)
    if not satisfied(run, name):
        return
    pods = run.group_pods(name)
    if group.suspend:
        if delete_all(
            run,
            pods,
            why=f"worker group {name} is suspended",
            failed=Reason.FAILED_TO_DELETE_WORKER_POD_COLLECTION,
            marker=ReplicaFailure.DELETE_WORKER_POD,
            group_of=dict.fromkeys((str(p["metadata"]["name"]) for p in pods), name),
        ):
            run.event(
                "Normal",
                Reason.DELETED_WORKER_POD,
                f"Deleted all pods for suspended "
                f"worker group {name} in RayCluster {run.namespace}/{run.name}",
                Action.DELETE,
            )
        return
    if group.num_of_hosts > 1 and run.tools.options.gates.ray_multi_host_indexing:
        multihost.reconcile_multi_host_group(run, group, pods)
        return
    _replace_unhealthy(run, name, pods)
    deleted = _delete_requested(run, group, pods)
    remaining = [p for p in live_pods(pods) if p["metadata"]["name"] not in deleted]
    diff = desired_worker_replicas(group) * group.num_of_hosts - len(remaining)
    if diff > 0:
        diff -= held_places(run, name, pods)
        if diff > 0:
            mtls.require_certificates(run)
            _create_workers(run, group, remaining, diff, carried=pods)
    elif diff < 0:
        _scale_down(run, name, remaining, -diff)


def _replace_unhealthy(run: ClusterRun, group: str, pods: list[Object]) -> None:
    replaced = 0
    for pod in pods:
        verdict = should_delete_pod(pod, "worker")
        if verdict.delete:
            delete_pod(run, pod, group=group, head=False, why=verdict.reason)
            replaced += 1
    if replaced:
        raise PodsReplaced(f"delete {replaced} unhealthy worker Pods")


def _delete_requested(run: ClusterRun, group: WorkerGroupSpec, pods: list[Object]) -> set[str]:
    """Delete the ``workersToDelete`` pods of this group. The list is not cleared (the
    autoscaler owns it); a name that is not a pod of this group is never deleted."""
    strategy = group.scale_strategy
    requested = set(strategy.workers_to_delete or ()) if strategy else set()
    deleted: set[str] = set()
    for pod in pods:
        name = str(pod["metadata"]["name"])
        if name in requested:
            if not being_deleted(pod):
                delete_pod(
                    run,
                    pod,
                    group=group.group_name,
                    head=False,
                    why="listed in scaleStrategy.workersToDelete",
                )
            deleted.add(name)
    return deleted


def _create_workers(
    run: ClusterRun,
    group: WorkerGroupSpec,
    remaining: list[Object],
    count: int,
    *,
    carried: list[Object],
) -> None:
    """Create the missing pods through the create queue (``creates.py``): the pass goes
    on at once, and the group waits for them through its expectations. A new pod's
    replica index is one no pod in ``carried`` has, Terminating ones included."""
    if not still_there(run):
        return
    allowed = take_budget(run, count)
    indexes = free_replica_indexes(carried, allowed)
    key, creates = run.group_key(group.group_name), run.tools.creates
    # Without pods, the group has not shown that the API server accepts its template:
    # its first create is a probe, the rest runs once it succeeded.
    probe = not remaining
    if allowed and creates.suspect(key):
        # The group's last create failed: this one runs here, so another rejection
        # fails this pass and the retries back off.
        create_worker(run, group, replica_index=next(indexes))
        creates.accepted(key)
        run.creates_unseen = True
        probe = False
    calls = [functools.partial(create_worker, run, group, replica_index=i) for i in indexes]
    if creates.submit(key, calls, wanted=functools.partial(_still_current, run), probe=probe):
        run.waiting_on_cache = True
        run.creates_unseen = True


def still_there(run: ClusterRun) -> bool:
    """Whether the cluster still stands on the server, asked live before a pass replaces
    pods of a ready cluster whose spec has not changed (at most once a pass).

    Such pods most often went with the cluster itself: the garbage collector deletes
    them after their owner, but the pod informer may hand those deletions over before the
    RayCluster informer hands over the owner's, and a pass over the cached cluster would
    make the pods again, for the collector to delete at once (seen after a RayJob's
    suspend). KubeRay's two informers leave the same window. A pass that creates for a
    spec change (a new cluster, a scale-up: a new generation) never pays the read."""
    if run.still_there is None:
        metadata, status = run.raw["metadata"], run.raw.get("status") or {}
        steady = status.get("state") == STATE_READY and status.get(
            "observedGeneration"
        ) == metadata.get("generation")
        run.still_there = not steady or _live_and_same(run)
    return run.still_there


def _live_and_same(run: ClusterRun) -> bool:
    try:
        live = run.tools.client.get(RAY_CLUSTER, run.name, run.namespace)
    except NotFound:
        log.info("%s: gone from the server; its vanished pods are not made again", run.key)
        return False
    live_metadata = live["metadata"]
    return live_metadata.get("uid") == run.raw["metadata"].get("uid") and not live_metadata.get(
        "deletionTimestamp"
    )


def _still_current(run: ClusterRun) -> bool:
    """Whether what ``run`` decided still holds: the cache shows the same cluster at the
    same generation, neither being deleted nor suspended."""
    now = run.tools.caches.clusters.get(run.namespace, run.name)
    if now is None:
        return False
    metadata, then = now["metadata"], run.raw["metadata"]
    return (
        metadata.get("uid") == then.get("uid")
        and metadata.get("generation") == then.get("generation")
        and not metadata.get("deletionTimestamp")
        and not (now.get("spec") or {}).get("suspend")
    )


def _scale_down(run: ClusterRun, group: str, remaining: list[Object], count: int) -> None:
    for pod in scale_down_victims(run, group, remaining, count, serving=running_and_ready):
        delete_pod(run, pod, group=group, head=False, why="scaling down")
