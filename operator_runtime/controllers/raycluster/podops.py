"""Creating and deleting one pod, with the scale expectation and the event each needs.

Every create or delete is recorded in the expectations under its group
(``ns/cluster/group``) *before* the next pass can look at that group again: until the
cache shows the new pod (or no longer shows the deleted one) the group is skipped.
That is what keeps a pass working on a stale cache from creating duplicates or
recreating a pod it just deleted (the 5 -> 4 scale-down bug).
"""

from __future__ import annotations

import logging
from typing import Final

from operator_runtime.api import JSONObject
from operator_runtime.controllers.raycluster.podhealth import is_terminating
from operator_runtime.controllers.raycluster.reasons import (
    Action,
    Reason,
    ReplicaFailure,
    ReplicaFailureError,
)
from operator_runtime.controllers.raycluster.reconciliation import Reconciliation, need
from operator_runtime.runtime.errors import ApiError, Conflict, NotFound
from operator_runtime.runtime.kinds import POD, Object

log = logging.getLogger(__name__)

POD_NEEDS: Final = (
    need("", "pods", ("list", "watch", "create", "delete"), "head and worker pods"),
    need("", "pods", ("patch",), "restamp the head pod after an operator upgrade"),
    # With the OwnerReferencesPermissionEnforcement admission plugin, a child with
    # blockOwnerDeletion needs update on the owner's finalizers.
    need("ray.io", "rayclusters/finalizers", ("update",), "owner references of children"),
)


def satisfied(run: Reconciliation, group: str) -> bool:
    key = run.group_key(group)
    pods = run.tools.caches.pods
    done = run.tools.expectations.is_satisfied(
        key, lambda namespace, name: pods.get(namespace, name) is not None
    )
    if not done:
        log.info(
            "%s: group %r waits for the cache to reflect %d pod change(s)",
            run.key,
            group or "head",
            run.tools.expectations.pending(key),
        )
    return done


def create_pod(run: Reconciliation, pod: JSONObject, *, group: str, head: bool) -> str:
    """Create ``pod``; returns its server-made name. Failures become ReplicaFailure."""
    what = "head" if head else "worker"
    try:
        created = run.tools.client.create(pod)
    except ApiError as exc:
        run.event(
            "Warning",
            Reason.FAILED_TO_CREATE_HEAD_POD if head else Reason.FAILED_TO_CREATE_WORKER_POD,
            f"Failed to create {what} Pod for the cluster {run.namespace}/{run.name}, {exc}",
            Action.CREATE,
        )
        marker = ReplicaFailure.CREATE_HEAD_POD if head else ReplicaFailure.CREATE_WORKER_POD
        raise ReplicaFailureError(marker, exc) from exc
    name = str(created["metadata"]["name"])
    run.tools.expectations.expect_create(run.group_key(group), run.namespace, name)
    run.event(
        "Normal",
        Reason.CREATED_HEAD_POD if head else Reason.CREATED_WORKER_POD,
        f"Created {what} Pod {run.namespace}/{name}",
        Action.CREATE,
    )
    return name


def delete_pod(run: Reconciliation, pod: Object, *, group: str, head: bool, why: str) -> None:
    """Delete ``pod`` (this very pod: its UID is a precondition, so a namesake created
    meanwhile is never hit). Already gone counts as done."""
    metadata = pod["metadata"]
    name = str(metadata["name"])
    what = "head" if head else "worker"
    try:
        run.tools.client.delete(POD, name, run.namespace, uid=metadata.get("uid"))
    except (NotFound, Conflict):
        log.info("%s: %s pod %s was already gone", run.key, what, name)
    except ApiError as exc:
        run.event(
            "Warning",
            Reason.FAILED_TO_DELETE_HEAD_POD if head else Reason.FAILED_TO_DELETE_WORKER_POD,
            f"Failed deleting {what} Pod {run.namespace}/{name}; {why}; {exc}",
            Action.DELETE,
        )
        marker = ReplicaFailure.DELETE_HEAD_POD if head else ReplicaFailure.DELETE_WORKER_POD
        raise ReplicaFailureError(marker, exc) from exc
    else:
        run.event(
            "Normal",
            Reason.DELETED_HEAD_POD if head else Reason.DELETED_WORKER_POD,
            f"Deleted {what} Pod {run.namespace}/{name}; {why}",
            Action.DELETE,
        )
    run.tools.expectations.expect_delete(run.group_key(group), run.namespace, name)


def delete_all(
    run: Reconciliation,
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
        if is_terminating(pod):
            continue
        name = str(pod["metadata"]["name"])
        try:
            run.tools.client.delete(POD, name, run.namespace, uid=pod["metadata"].get("uid"))
        except (NotFound, Conflict):
            pass
        except ApiError as exc:
            run.event(
                "Warning",
                failed,
                f"Failed deleting Pods of RayCluster {run.namespace}/{run.name} ({why}), {exc}",
                Action.DELETE,
            )
            raise ReplicaFailureError(marker, exc) from exc
        else:
            deleted += 1
        if group_of is not None and name in group_of:
            run.tools.expectations.expect_delete(run.group_key(group_of[name]), run.namespace, name)
    return deleted
