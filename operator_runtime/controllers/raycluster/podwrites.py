"""The pod writes and their expectations: pods.py decides them, podrules.py holds pure rules.

Creating or deleting one pod, with the scale expectation and the event each needs.
Every create or delete is recorded in the expectations under its group
(``ns/cluster/group``) *before* the next pass can look at that group again: until the
cache shows the new pod (or no longer shows the deleted one) the group is skipped.
That is what keeps a pass working on a stale cache from creating duplicates or
recreating a pod it just deleted (the 5 -> 4 scale-down bug).

A create whose outcome is unknown (a 504 or a timeout after sending: the pod may exist
under a name we never learnt) blocks its group the same way, until a fresh LIST of the
group's pods shows what is really there; only then may the group create again.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from typing import Final

from operator_runtime.api import JSONObject, WorkerGroupSpec
from operator_runtime.api.labels import LabelKey, NodeType
from operator_runtime.api.reasons import Action, Reason, ReplicaFailure
from operator_runtime.controllers.raycluster.podrules import held_replica_indexes, replica_index
from operator_runtime.controllers.raycluster.run import ClusterRun, need
from operator_runtime.render import PodParams, build_pod
from operator_runtime.runtime.cache import keep_paths
from operator_runtime.runtime.errors import ApiError, Conflict, NotFound, OutcomeUnknown
from operator_runtime.runtime.kinds import POD, Object, being_deleted

log = logging.getLogger(__name__)

POD_NEEDS: Final = (
    need("", "pods", ("list", "watch", "create", "delete"), "head and worker pods"),
    need("", "pods", ("patch",), "restamp the head pod after an operator upgrade"),
    # With the OwnerReferencesPermissionEnforcement admission plugin, a child with
    # blockOwnerDeletion needs update on the owner's finalizers.
    need("ray.io", "rayclusters/finalizers", ("update",), "owner references of children"),
)


class ReplicaFailureError(Exception):
    """A pod operation failed; the status gets ``ReplicaFailure=True`` with ``reason``."""

    def __init__(self, reason: ReplicaFailure, cause: BaseException) -> None:
        super().__init__(f"{reason.value}: {cause}")
        self.reason = reason
        self.cause = cause


@dataclass(frozen=True, slots=True)
class _Role:
    """The event reasons and ReplicaFailure markers of one kind of pod."""

    what: str
    created: Reason
    create_failed: Reason
    create_marker: ReplicaFailure
    deleted: Reason
    delete_failed: Reason
    delete_marker: ReplicaFailure


_IDENTITY: Final = keep_paths(())
"""Name, namespace, labels and owners: what ``list_group`` reads of a pod."""

_HEAD: Final = _Role(
    what="head",
    created=Reason.CREATED_HEAD_POD,
    create_failed=Reason.FAILED_TO_CREATE_HEAD_POD,
    create_marker=ReplicaFailure.CREATE_HEAD_POD,
    deleted=Reason.DELETED_HEAD_POD,
    delete_failed=Reason.FAILED_TO_DELETE_HEAD_POD,
    delete_marker=ReplicaFailure.DELETE_HEAD_POD,
)
_WORKER: Final = _Role(
    what="worker",
    created=Reason.CREATED_WORKER_POD,
    create_failed=Reason.FAILED_TO_CREATE_WORKER_POD,
    create_marker=ReplicaFailure.CREATE_WORKER_POD,
    deleted=Reason.DELETED_WORKER_POD,
    delete_failed=Reason.FAILED_TO_DELETE_WORKER_POD,
    delete_marker=ReplicaFailure.DELETE_WORKER_POD,
)


def _failure(
    run: ClusterRun,
    reason: Reason,
    message: str,
    action: Action,
    marker: ReplicaFailure,
    exc: ApiError,
) -> ReplicaFailureError:
    """Record the Warning event of a failed pod operation; the error to raise for it."""
    run.event("Warning", reason, message, action)
    return ReplicaFailureError(marker, exc)


def satisfied(run: ClusterRun, group: str) -> bool:
    key = run.group_key(group)
    pods = run.tools.caches.pods
    if run.tools.expectations.has_unknown(key):
        # A LIST error propagates: the pass fails and retries, the group stays blocked.
        run.tools.expectations.resolve_unknown(key, list_group(run, group), pods.get)
    done = run.tools.expectations.is_satisfied(key, pods.get)
    if done:
        run.refresh_pods()  # what the group counts next is at least as new as this check
    else:
        run.waiting_on_cache = True
        run.creates_unseen |= run.tools.expectations.awaits_creates(key)
        run.recheck_within(run.tools.expectations.lapses_in(key))
        log.info(
            "%s: group %r waits for the cache to reflect %d pod change(s)",
            run.key,
            group or "head",
            run.tools.expectations.pending(key),
        )
    return done


def list_group(run: ClusterRun, group: str) -> list[tuple[str, str]]:
    """(namespace, name) of the group's pods this cluster controls, from a fresh LIST
    of the API server (not the cache, which may not show a create yet)."""
    labels = {LabelKey.CLUSTER.value: run.name}
    if group:
        labels.update({LabelKey.GROUP.value: group, LabelKey.NODE_TYPE.value: NodeType.WORKER})
    else:
        labels[LabelKey.NODE_TYPE.value] = NodeType.HEAD
    selector = ",".join(f"{key}={value}" for key, value in sorted(labels.items()))
    # Identity metadata only, page by page: a group of thousands of workers is never
    # held as full pods all at once.
    items, _ = run.tools.client.list_all(
        POD, run.namespace, label_selector=selector, transform=_IDENTITY
    )
    return [(run.namespace, str(pod["metadata"]["name"])) for pod in items if run.controls(pod)]


def create_pod(run: ClusterRun, pod: JSONObject, *, group: str, head: bool) -> str:
    """Create ``pod``; returns its server-made name. Failures become ReplicaFailure."""
    role = _HEAD if head else _WORKER
    try:
        created = run.tools.client.create(pod)
    except OutcomeUnknown as exc:
        # Maybe created: never guess. The group waits for a fresh LIST (``satisfied``).
        run.tools.expectations.expect_unknown(run.group_key(group))
        cluster = f"{run.namespace}/{run.name}"
        message = (
            f"Failed to create {role.what} Pod for the cluster {cluster} (it may exist; "
            f"creates wait until the pods are listed again), {exc}"
        )
        raise _failure(
            run, role.create_failed, message, Action.CREATE, role.create_marker, exc
        ) from exc
    except ApiError as exc:
        cluster = f"{run.namespace}/{run.name}"
        message = f"Failed to create {role.what} Pod for the cluster {cluster}, {exc}"
        raise _failure(
            run, role.create_failed, message, Action.CREATE, role.create_marker, exc
        ) from exc
    name = str(created["metadata"]["name"])
    run.tools.expectations.expect_create(run.group_key(group), run.namespace, name)
    run.event(
        "Normal", role.created, f"Created {role.what} Pod {run.namespace}/{name}", Action.CREATE
    )
    return name


def delete_pod(run: ClusterRun, pod: Object, *, group: str, head: bool, why: str) -> None:
    """Delete ``pod`` (this very pod: its UID is a precondition, so a namesake created
    meanwhile is never hit). Already gone counts as done."""
    metadata = pod["metadata"]
    name = str(metadata["name"])
    role = _HEAD if head else _WORKER
    try:
        run.tools.client.delete(POD, name, run.namespace, uid=metadata.get("uid"))
    except (NotFound, Conflict):
        log.info("%s: %s pod %s was already gone", run.key, role.what, name)
    except ApiError as exc:
        message = f"Failed deleting {role.what} Pod {run.namespace}/{name}; {why}; {exc}"
        raise _failure(
            run, role.delete_failed, message, Action.DELETE, role.delete_marker, exc
        ) from exc
    else:
        message = f"Deleted {role.what} Pod {run.namespace}/{name}; {why}"
        run.event("Normal", role.deleted, message, Action.DELETE)
    run.tools.expectations.expect_delete(run.group_key(group), run.namespace, name)


def delete_all(
    run: ClusterRun,
    pods: list[Object],
    *,
    why: str,
    failed: Reason,
    marker: ReplicaFailure,
    group_of: dict[str, str] | None = None,
) -> int:
    """Delete every pod not already terminating; returns how many were deleted.

    ``group_of`` (pod name -> group) records a delete expectation per pod, so nothing
    is recreated from a cache that still shows them.
    """
    deleted = 0
    for pod in pods:
        if being_deleted(pod):
            continue
        name = str(pod["metadata"]["name"])
        try:
            run.tools.client.delete(POD, name, run.namespace, uid=pod["metadata"].get("uid"))
        except (NotFound, Conflict):
            pass
        except ApiError as exc:
            message = (
                f"Failed deleting Pods of RayCluster {run.namespace}/{run.name} ({why}), {exc}"
            )
            raise _failure(run, failed, message, Action.DELETE, marker, exc) from exc
        else:
            deleted += 1
        if group_of is not None and name in group_of:
            run.tools.expectations.expect_delete(run.group_key(group_of[name]), run.namespace, name)
    return deleted


def free_replica_indexes(pods: Iterable[Object], count: int) -> Iterator[int]:
    """The ``count`` lowest ``ray.io/worker-group-replica-index`` values no pod carries,
    lowest first, generated lazily: ``count`` comes from the spec and may be 2**31 - 1,
    while a pass only ever takes a batch of them."""
    used = {index for pod in pods if (index := replica_index(pod)) is not None}
    index = 0
    for _ in range(count):
        while index in used:
            index += 1
        yield index
        index += 1


def held_places(
    run: ClusterRun, group: str, pods: list[Object], going: Collection[str] = ()
) -> int:
    """How many missing workers (or multi-host replicas) of an indexed group wait for a
    Terminating pod to let go of its replica index (``podrules.held_replica_indexes``);
    the pass looks again when the first hold lapses, in case that pod never goes. A hold
    only ever defers a create, never causes a delete: it is taken off the missing count,
    never added to the live one, so a scale-down's Terminating victims cannot make a
    second victim."""
    if not run.tools.options.gates.ray_multi_host_indexing:
        return 0  # no replica indexes: a Terminating pod holds nothing
    held = held_replica_indexes(pods, run.tools.clock.now(), going=going)
    if held:
        run.recheck_within(min(held.values()))
        log.info(
            "%s: group %r waits for Terminating pods to release replica indexes %s",
            run.key,
            group,
            sorted(held),
        )
    return len(held)


def create_worker(
    run: ClusterRun,
    group: WorkerGroupSpec,
    *,
    replica_index: int,
    replica_name: str = "",
    host_index: int = 0,
) -> None:
    """Render and create one worker pod of ``group``."""
    if replica_name or host_index:  # a multi-host replica: rendered whole
        pod = build_pod(
            params=_worker_params(
                run, group, replica_index=replica_index, replica_name=replica_name,
                host_index=host_index,
            )
        )  # fmt: skip
    else:
        pod = single_host_worker(run, group, replica_index)
    create_pod(run, pod, group=group.group_name, head=False)


def _worker_params(
    run: ClusterRun,
    group: WorkerGroupSpec,
    *,
    replica_index: int = 0,
    replica_name: str = "",
    host_index: int = 0,
) -> PodParams:
    """What rendering a worker of ``group`` takes (one replica's index, name, host)."""
    return PodParams(
        cluster=run.cluster,
        node_type=NodeType.WORKER,
        group_name=group.group_name,
        options=run.tools.options.render,
        replica_index=replica_index,
        replica_name=replica_name,
        host_index=host_index,
    )


def single_host_worker(run: ClusterRun, group: WorkerGroupSpec, replica_index: int) -> JSONObject:
    """A single-host worker pod of ``group``: rendered once per pass and group, then
    shared (a create only reads it) with its own replica-index label. The workers of a
    group differ by that label alone; rendering each of a hundred anew was 6% of the
    operator's CPU in a scale-up (benchmarks/README.md)."""
    rendered = run.worker_renders.get(group.group_name)
    if rendered is None:
        rendered = build_pod(params=_worker_params(run, group))
        run.worker_renders[group.group_name] = rendered
    if not run.tools.options.gates.ray_multi_host_indexing:
        return rendered  # no per-replica label: the workers are all the same
    metadata = rendered["metadata"]
    labels = metadata.get("labels") if isinstance(metadata, dict) else None
    assert isinstance(metadata, dict) and isinstance(labels, dict)
    index = LabelKey.WORKER_GROUP_REPLICA_INDEX.value
    return {
        **rendered,
        "metadata": {**metadata, "labels": {**labels, index: str(replica_index)}},
    }
