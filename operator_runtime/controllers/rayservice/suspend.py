"""Suspending a RayService: delete every cluster and Service it owns (and the Gateway
and HTTPRoute of an incremental upgrade), then report Suspended. A suspend always
completes, even when the spec is unsuspended midway; resuming starts over."""

from __future__ import annotations

from typing import Final

from operator_runtime.api.rayservice import (
    READY,
    ROLLBACK_IN_PROGRESS,
    SUSPENDED,
    SUSPENDING,
    UPGRADE_IN_PROGRESS,
)
from operator_runtime.api.reasons import Action
from operator_runtime.controllers.rayservice import clusters, traffic
from operator_runtime.controllers.rayservice.run import (
    ACTIVE,
    PENDING,
    ServiceRun,
)
from operator_runtime.runtime import kinds
from operator_runtime.runtime.errors import ApiError, NotFound
from operator_runtime.runtime.kinds import Object, ResourceKind

SUSPEND_IN_PROGRESS: Final = "SuspendInProgress"
SUSPEND_COMPLETE: Final = "SuspendComplete"


def operative(run: ServiceRun) -> bool:
    """Suspending or Suspended: the pass ends after the status write."""
    return run.is_true(SUSPENDING) or run.is_true(SUSPENDED)


def handle_suspend(run: ServiceRun) -> None:
    suspend = bool(run.service.spec.suspend)
    if run.is_true(SUSPENDED):
        if not suspend:
            _observe_generation(run)
            run.set_condition(
                SUSPENDED,
                "False",
                "RayServiceResumed",
                "Spec.Suspend is false; RayService has resumed.",
            )
            for type_ in (READY, UPGRADE_IN_PROGRESS):
                run.remove_condition(type_)
                run.set_condition(
                    type_,
                    "False",
                    "Initializing",
                    "RayService is initializing after resuming from suspend.",
                )
        return
    if not run.is_true(SUSPENDING):
        if not suspend:
            return
        _observe_generation(run)
        run.set_condition(
            SUSPENDING,
            "True",
            "SuspendRequested",
            "Spec.Suspend is true; will delete all Kubernetes resources owned by this RayService.",
        )
        _everything_false(run, SUSPEND_IN_PROGRESS, "RayService is suspending.")
        run.status.pop(ACTIVE, None)
        run.status.pop(PENDING, None)
        run.status["numServeEndpoints"] = 0
        run.status.pop("serviceStatus", None)
        return
    if not _delete_owned(run):
        run.set_condition(
            SUSPENDING,
            "True",
            SUSPEND_IN_PROGRESS,
            "Waiting for all Kubernetes resources owned by this RayService to be deleted.",
        )
        return
    done = "All owned resources have been deleted."
    run.set_condition(SUSPENDING, "False", SUSPEND_COMPLETE, done)
    run.set_condition(SUSPENDED, "True", SUSPEND_COMPLETE, done)
    _everything_false(run, SUSPEND_COMPLETE, "RayService is suspended.")


def _observe_generation(run: ServiceRun) -> None:
    run.status["observedGeneration"] = int(run.raw["metadata"].get("generation") or 0)


def _everything_false(run: ServiceRun, reason: str, ready_message: str) -> None:
    run.set_condition(READY, "False", reason, ready_message)
    run.set_condition(UPGRADE_IN_PROGRESS, "False", reason, "No upgrade in progress.")
    run.set_condition(ROLLBACK_IN_PROGRESS, "False", reason, "No rollback in progress.")


def _delete_owned(run: ServiceRun) -> bool:
    """Ask for the deletion of what the RayService owns; True once nothing is left."""
    remaining = False
    for cluster in clusters.owned_clusters(run):
        remaining = True
        _delete(run, kinds.RAY_CLUSTER, "RayCluster", cluster)
    for service in clusters.owned(run, run.tools.caches.services):
        remaining = True
        _delete(run, kinds.SERVICE, "Service", service)
    if run.incremental:
        for kind, what, name in (
            (kinds.GATEWAY, "Gateway", traffic.gateway_name(run)),
            (kinds.HTTP_ROUTE, "HTTPRoute", traffic.httproute_name(run)),
        ):
            try:
                found = run.tools.client.get(kind, name, run.namespace)
            except NotFound:
                continue
            if not traffic.ours(run, found):
                traffic.foreign(run, what, name, Action.DELETE)
                continue
            remaining = True
            _delete(run, kind, what, found)
    return not remaining


def _delete(run: ServiceRun, kind: ResourceKind, what: str, obj: Object) -> None:
    metadata = obj["metadata"]
    if metadata.get("deletionTimestamp"):
        return
    name = str(metadata["name"])
    try:
        run.tools.client.delete(kind, name, run.namespace)
    except NotFound:
        return
    except ApiError as exc:
        run.event(
            "Warning",
            f"FailedToDelete{what}",
            f"Failed to delete the {what} {run.namespace}/{name} during suspend: {exc}",
            Action.DELETE,
        )
        raise
    run.event(
        "Normal",
        f"Deleted{what}",
        f"Deleted the {what} {run.namespace}/{name} during suspend",
        Action.DELETE,
    )
