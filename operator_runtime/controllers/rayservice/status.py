"""The RayService's status: each side's cluster and applications, the traffic weights of
an incremental upgrade, ``numServeEndpoints`` from EndpointSlices, the conditions, the
initializing timeout, and when the status is worth a write. Switching the Services and
promoting the pending cluster are ``switch.py``'s."""

from __future__ import annotations

import logging
from typing import Any, Final

from operator_runtime.api.rayservice import (
    READY,
    ROLLBACK_IN_PROGRESS,
    UPGRADE_IN_PROGRESS,
    ServiceStatus,
)
from operator_runtime.api.reasons import Action
from operator_runtime.api.validation._syntax import parse_go_duration, parse_go_int
from operator_runtime.controllers.rayservice import clusters, switch, traffic
from operator_runtime.controllers.rayservice.run import (
    ACTIVE,
    PENDING,
    ServiceRun,
    need,
)
from operator_runtime.runtime.clock import parse_time
from operator_runtime.runtime.kinds import Object

log = logging.getLogger(__name__)
SERVICE_NAME_LABEL: Final = "kubernetes.io/service-name"
INITIALIZING: Final = "Initializing"
INITIALIZING_TIMEOUT: Final = "InitializingTimeout"
TIMEOUT_ANNOTATION: Final = "ray.io/initializing-timeout"

NEEDS: Final = (
    need(
        "discovery.k8s.io",
        "endpointslices",
        ("list", "watch"),
        "numServeEndpoints: ready serve pods behind the serve Service",
    ),
)


# -- status ----------------------------------------------------------------------------


def calculate_status(
    run: ServiceRun,
    services: tuple[Object, Object] | None,
    active: Object | None,
    pending: Object | None,
    active_apps: dict[str, Any] | None,
    pending_apps: dict[str, Any] | None,
    route: Object | None,
) -> None:
    status = run.status
    status["observedGeneration"] = int(run.raw["metadata"].get("generation") or 0)
    for which, cluster, apps in ((ACTIVE, active, active_apps), (PENDING, pending, pending_apps)):
        side = run.side(which)
        _set(side, "rayClusterStatus", (cluster or {}).get("status") or {})
        _set(side, "applicationStatuses", apps or {})
    pending_serving = False
    if services is not None:
        if run.incremental:
            _record_weights(run, route, pending)
        pending_serving = switch.promote(run, services, pending)
    if run.is_true(ROLLBACK_IN_PROGRESS) and traffic.rollback_complete(run, pending):
        status[PENDING] = {}
        pending = None
        run.remove_condition(ROLLBACK_IN_PROGRESS)
        run.set_condition(
            UPGRADE_IN_PROGRESS,
            "False",
            "NoPendingCluster",
            "Rollback complete, active Ray cluster exists and no pending Ray cluster",
        )
    if clusters.should_prepare_new_cluster(run, active, pending, pending_serving):
        name = run.tools.suffixed(run.name)
        log.info("%s: the cluster spec changed; preparing a new RayCluster %s", run.key, name)
        status[PENDING] = {"rayClusterName": name}
        if run.incremental:
            active_side = run.side(ACTIVE)
            if not active_side.get("rayClusterName"):
                if active_side.get("targetCapacity") is None:
                    status[PENDING]["targetCapacity"] = 100
            else:
                status[PENDING]["targetCapacity"] = 0
    endpoints = serve_endpoints(run, _serve_service_name(run, active))
    if run.incremental and pending is not None:
        endpoints += serve_endpoints(run, f"{pending['metadata']['name']}-serve-svc")
    status["numServeEndpoints"] = endpoints
    _conditions(run)
    service_status: ServiceStatus = "Running" if run.is_true(READY) else ""
    status["serviceStatus"] = service_status
    if not service_status:
        status.pop("serviceStatus")
    for which in (ACTIVE, PENDING):
        if not status.get(which):
            status.pop(which, None)


def _set(side: dict[str, Any], key: str, value: Any) -> None:
    if value:
        side[key] = value
    else:
        side.pop(key, None)


def _record_weights(run: ServiceRun, route: Object | None, pending: Object | None) -> None:
    active_weight, pending_weight = traffic.weights_of(route, run)
    now = run.now_text()
    if active_weight >= 0:
        side = run.side(ACTIVE)
        if side.get("trafficRoutedPercent", -1) != active_weight:
            side["lastTrafficMigratedTime"] = now
        side["trafficRoutedPercent"] = active_weight
    if pending_weight >= 0 and pending is not None:
        side = run.side(PENDING)
        if side.get("trafficRoutedPercent", -1) != pending_weight:
            side["lastTrafficMigratedTime"] = now
        side["trafficRoutedPercent"] = pending_weight


def _serve_service_name(run: ServiceRun, active: Object | None) -> str:
    if run.incremental and active is not None:
        return f"{active['metadata']['name']}-serve-svc"
    serve_service = run.service.spec.serve_service
    metadata = serve_service.get("metadata") if isinstance(serve_service, dict) else None
    named = metadata.get("name") if isinstance(metadata, dict) else None
    return str(named or f"{run.name}-serve-svc")


def serve_endpoints(run: ServiceRun, service_name: str) -> int:
    """Distinct ready pods across the EndpointSlices of the Service as it is now.

    Better than KubeRay, which counts every slice labelled with the Service's name: a
    suspend deletes the serve Service, and its slices stay until the garbage collector
    removes them, so a RayService resumed within that window was Ready, with no serve
    Service at all, on the endpoints of a head deleted seconds before (seen in a test
    run under load). A slice counts only while its Service exists and it belongs to
    that Service (its owner reference's uid), not to an earlier one of the same name."""
    service = run.tools.caches.services.get(run.namespace, service_name)
    if service is None:
        return 0
    service_uid = (service.get("metadata") or {}).get("uid")
    ready: set[str] = set()
    for endpoint_slice in run.tools.caches.endpoint_slices.list(run.namespace):
        metadata = endpoint_slice.get("metadata") or {}
        if (metadata.get("labels") or {}).get(SERVICE_NAME_LABEL) != service_name:
            continue
        owners = {
            owner.get("uid")
            for owner in metadata.get("ownerReferences") or ()
            if owner.get("kind") == "Service"
        }
        if owners and service_uid not in owners:
            continue
        for endpoint in endpoint_slice.get("endpoints") or ():
            pod_uid = (endpoint.get("targetRef") or {}).get("uid")
            if (endpoint.get("conditions") or {}).get("ready") and pod_uid:
                ready.add(str(pod_uid))
    return len(ready)


def _conditions(run: ServiceRun) -> None:
    if not run.status.get("conditions"):
        message = "RayService is initializing"
        run.set_condition(READY, "False", INITIALIZING, message)
        run.set_condition(UPGRADE_IN_PROGRESS, "False", INITIALIZING, message)
    if run.status.get("numServeEndpoints", 0) > 0:
        run.set_condition(
            READY, "True", "NonZeroServeEndpoints", "Number of serve endpoints is greater than 0"
        )
    elif run.is_true(READY):
        run.set_condition(
            READY, "False", "ZeroServeEndpoints", "Number of serve endpoints dropped to 0"
        )
    else:
        _initializing_timeout(run)
    active_name, pending_name = run.cluster_name(ACTIVE), run.cluster_name(PENDING)
    if active_name and pending_name:
        run.set_condition(
            UPGRADE_IN_PROGRESS,
            "True",
            "BothActivePendingClustersExist",
            "Both active and pending Ray clusters exist",
        )
    elif active_name:
        run.set_condition(
            UPGRADE_IN_PROGRESS,
            "False",
            "NoPendingCluster",
            "Active Ray cluster exists and no pending Ray cluster",
        )
    else:
        found = run.condition(UPGRADE_IN_PROGRESS)
        if found is None or found.get("reason") not in (INITIALIZING, INITIALIZING_TIMEOUT):
            run.set_condition(
                UPGRADE_IN_PROGRESS,
                "Unknown",
                "NoActiveCluster",
                "No active Ray cluster exists, and the RayService is not initializing.",
            )


def initializing_timeout_seconds(annotations: dict[str, str]) -> float | None:
    """``ray.io/initializing-timeout``: a Go duration (``90s``, ``1h30m``, ``.5m``), else
    Go ``Atoi`` seconds (``+90``), as KubeRay reads it. The validator reads it the same
    way, so every value it lets through times out here."""
    value = (annotations.get(TIMEOUT_ANNOTATION) or "").strip()
    if not value:
        return None
    seconds = parse_go_duration(value)
    if seconds is not None:
        return seconds
    whole = parse_go_int(value)
    return None if whole is None else float(whole)


def timed_out(run: ServiceRun) -> bool:
    """Ready is False with reason InitializingTimeout: terminal, nothing more to do."""
    found = run.condition(READY)
    return (
        found is not None
        and found.get("status") == "False"
        and (found.get("reason") == INITIALIZING_TIMEOUT)
    )


def _initializing_timeout(run: ServiceRun) -> None:
    timeout = initializing_timeout_seconds(run.service.metadata.annotations or {})
    found = run.condition(READY)
    if timeout is None or found is None:
        return
    if found.get("status") != "False" or found.get("reason") != INITIALIZING:
        return
    since = parse_time(found.get("lastTransitionTime"))
    if since is None:
        return
    spent = (run.now() - since).total_seconds()
    if spent < timeout:
        return
    for which in (ACTIVE, PENDING):
        run.side(which).pop("rayClusterName", None)
    run.set_condition(
        READY,
        "False",
        INITIALIZING_TIMEOUT,
        "RayService failed to become ready "
        f"within the configured timeout of {timeout:g}s. Time spent initializing: "
        f"{spent:.0f}s",
    )
    run.event(
        "Warning",
        "RayServiceInitializingTimeout",
        "RayService initializing timeout "
        f"exceeded after {spent:.0f}s (configured timeout: {timeout:g}s)",
        Action.RECONCILE,
    )


def status_changed(run: ServiceRun) -> bool:
    """KubeRay's rule: serviceStatus, numServeEndpoints, conditions, each side's cluster
    name and application statuses (and the incremental fields) — not the clusters'
    own status copies, which change on every pod event."""
    old: dict[str, Any] = run.raw.get("status") or {}
    new = run.status
    for key in ("serviceStatus", "numServeEndpoints", "conditions", "observedGeneration"):
        if old.get(key) != new.get(key):
            return True
    fields = ["rayClusterName", "applicationStatuses"]
    if run.tools.options.gates.ray_service_incremental_upgrade:
        fields += ["trafficRoutedPercent", "targetCapacity", "lastTrafficMigratedTime"]
    for which in (ACTIVE, PENDING):
        before, after = old.get(which) or {}, new.get(which) or {}
        if any(before.get(f) != after.get(f) for f in fields):
            return True
    return False
