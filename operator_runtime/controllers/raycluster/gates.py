"""Gate steps: whether this pass may touch the cluster's children at all.

Each returns a ``Result`` to end the pass right there (nothing created, no status
written) or None to go on. Order (KubeRay's): someone else manages it; the object is
invalid; the GCS FT finalizer flow; the cluster is being deleted.
"""

from __future__ import annotations

from typing import Final

from operator_runtime.api import InvalidObjectError, InvalidStatusError, validate_raycluster
from operator_runtime.api.reasons import Action, Reason
from operator_runtime.controllers.managedby import managed_elsewhere
from operator_runtime.controllers.raycluster.options import SHORT_REQUEUE_SECONDS
from operator_runtime.controllers.raycluster.run import ClusterRun
from operator_runtime.runtime.reconcile import Result

_REASONS: Final = {
    "InvalidRayClusterMetadata": Reason.INVALID_METADATA,
    "InvalidRayClusterSpec": Reason.INVALID_SPEC,
    "InvalidRayClusterStatus": Reason.INVALID_STATUS,
}


def skip_unmanaged(run: ClusterRun) -> Result | None:
    """``spec.managedBy`` names another controller (e.g. MultiKueue): hands off."""
    return Result() if managed_elsewhere(run.key, run.raw) else None


def validate(run: ClusterRun) -> Result | None:
    """An invalid object gets a Warning event and no children; the user must fix it,
    so there is no retry, except for an inconsistent status, which we may correct."""
    try:
        validate_raycluster(run.cluster, run.tools.options.gates)
    except InvalidObjectError as exc:
        what = exc.scope.value.lower()
        run.event(
            "Warning",
            _REASONS[exc.event_reason],
            f"The RayCluster {what} is invalid {run.namespace}/{run.name}: {exc}",
            Action.VALIDATE,
        )
        if isinstance(exc, InvalidStatusError):
            return Result(requeue_after=SHORT_REQUEUE_SECONDS)
        return Result()
    _warn_autoscaler_v1_restart_policy(run)
    return None


def _warn_autoscaler_v1_restart_policy(run: ClusterRun) -> None:
    spec = run.cluster.spec
    options = spec.autoscaler_options
    if not spec.enable_in_tree_autoscaling or (options is not None and options.version == "v2"):
        return
    groups = []
    for group in spec.worker_group_specs or ():
        pod_spec = group.template.get("spec")
        policy = pod_spec.get("restartPolicy") if isinstance(pod_spec, dict) else None
        if policy not in (None, "", "Never"):
            groups.append(group.group_name)
    if groups:
        run.event(
            "Warning",
            Reason.INVALID_SPEC,
            f"RayCluster spec warning {run.namespace}/{run.name}: restartPolicy for worker "
            f"groups [{', '.join(groups)}] should be Never or unset when using autoscaler "
            "V1",
            Action.VALIDATE,
        )


def stop_if_deleting(run: ClusterRun) -> Result | None:
    """Children go with the cluster (owner references); nothing to build any more."""
    return Result() if run.raw["metadata"].get("deletionTimestamp") else None
