"""Incremental upgrade (gate RayServiceIncrementalUpgrade, ``upgradeStrategy.type:
NewClusterWithIncrementalUpgrade``): the Gateway ``<s>-gateway``, the HTTPRoute
``<s>-httproute`` whose backend weights move traffic from the active to the pending
cluster one ``stepSizePercent`` every ``intervalSeconds``, the per-cluster serve
Services it routes to, and the rollback rule (KubeRay §5.4, §5.5).

Gateway and HTTPRoute are read with a GET, not watched: their CRDs exist only where a
Gateway API implementation is installed, and only incremental RayServices use them.
They are found by name, so one of that name the RayService does not control (another
team's, or made by hand) is never updated, deleted or trusted: a Warning names it.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable
from typing import Any, Final

from operator_runtime.api.raycluster import HEAD_POD_READY
from operator_runtime.api.rayservice import ROLLBACK_IN_PROGRESS, UPGRADE_IN_PROGRESS
from operator_runtime.api.reasons import Action
from operator_runtime.controllers.conditions import is_true
from operator_runtime.controllers.rayservice.clusters import cluster_hash
from operator_runtime.controllers.rayservice.run import (
    ACTIVE,
    PENDING,
    ServiceRun,
    need,
)
from operator_runtime.render import (
    build_cluster_serve_service,
    build_gateway,
    build_httproute,
    gateway_equal,
    gateway_ready,
    httproute_equal,
    httproute_ready,
)
from operator_runtime.render.rayservice_upgrade import traffic_step
from operator_runtime.runtime import kinds
from operator_runtime.runtime.clock import parse_time
from operator_runtime.runtime.errors import AlreadyExists, ApiError
from operator_runtime.runtime.kinds import Object
from operator_runtime.runtime.reconcile import controlled_by

log = logging.getLogger(__name__)
DEFAULT_MAX_SURGE: Final = 100
INCREMENTAL_UPGRADE_GATE: Final = "RayServiceIncrementalUpgrade"

NEEDS: Final = (
    need(
        "gateway.networking.k8s.io",
        "gateways",
        ("get", "create", "update", "delete"),
        "incremental upgrade: the RayService's Gateway",
        INCREMENTAL_UPGRADE_GATE,
    ),
    need(
        "gateway.networking.k8s.io",
        "httproutes",
        ("get", "create", "update", "delete"),
        "incremental upgrade: the RayService's HTTPRoute and its weights",
        INCREMENTAL_UPGRADE_GATE,
    ),
)


def _options(run: ServiceRun) -> Any:
    strategy = run.service.spec.upgrade_strategy
    return strategy.cluster_upgrade_options if strategy is not None else None


def max_surge(run: ServiceRun) -> int:
    options = _options(run)
    value = options.max_surge_percent if options is not None else None
    return DEFAULT_MAX_SURGE if value is None else int(value)


def _get(run: ServiceRun, kind: kinds.ResourceKind, name: str) -> Object | None:
    return run.tools.client.find(kind, name, run.namespace)


def ours(run: ServiceRun, found: Object) -> bool:
    """Whether this RayService is ``found``'s controller owner."""
    return controlled_by(found, str(run.raw["metadata"].get("uid") or ""))


def foreign(run: ServiceRun, what: str, name: str, action: Action) -> None:
    """A Warning that the ``what`` of our name belongs to someone else, left alone."""
    verb = "deleting" if action is Action.DELETE else "modifying"
    run.event(
        "Warning",
        f"FailedTo{action.value}{what}",
        f"{what} {run.namespace}/{name} already exists and is not owned by this "
        f"RayService; not {verb} it",
        action,
    )


def _get_ours(run: ServiceRun, kind: kinds.ResourceKind, name: str) -> Object | None:
    """The object only if this RayService controls it."""
    found = _get(run, kind, name)
    return found if found is not None and ours(run, found) else None


def gateway_name(run: ServiceRun) -> str:
    return f"{run.name}-gateway"


def httproute_name(run: ServiceRun) -> str:
    return f"{run.name}-httproute"


def routing_ready(run: ServiceRun) -> bool:
    """Both the Gateway and the HTTPRoute are accepted by the gateway implementation."""
    gateway = _get_ours(run, kinds.GATEWAY, gateway_name(run))
    if gateway is None or not gateway_ready(gateway):
        return False
    route = _get_ours(run, kinds.HTTP_ROUTE, httproute_name(run))
    return route is not None and httproute_ready(route, gateway_name(run))


def reconcile_cluster_serve_service(run: ServiceRun, cluster: Object | None) -> None:
    """``<cluster>-serve-svc``, owned by its cluster, created once."""
    if cluster is None:
        return
    desired: dict[str, Any] = dict(
        build_cluster_serve_service(
            service=run.service,
            cluster=run.cluster_model(cluster),
            options=run.tools.options.render,
        )
    )
    name = str(desired["metadata"]["name"])
    if run.tools.caches.services.get(run.namespace, name) is not None:
        return
    try:
        run.tools.client.create(desired)
    except AlreadyExists:
        return


def reconcile_gateway(run: ServiceRun) -> None:
    desired: dict[str, Any] = dict(build_gateway(service=run.service))
    existing = _get(run, kinds.GATEWAY, gateway_name(run))
    if existing is not None and not ours(run, existing):
        foreign(run, "Gateway", gateway_name(run), Action.UPDATE)
        return
    _create_or_update(run, kinds.GATEWAY, "Gateway", desired, existing, gateway_equal)


def reconcile_httproute(run: ServiceRun, pending_ready: bool) -> Object | None:
    """The route with this pass's weights; None while there is no active cluster, or
    when a route of its name is not this RayService's."""
    active_name, pending_name = run.cluster_name(ACTIVE), run.cluster_name(PENDING)
    active = run.cluster(active_name)
    if active is None:
        return None
    active_weight, pending_weight = traffic_weights(run, pending_ready)
    backends = [(f"{active_name}-serve-svc", active_weight, run.serve_port(active))]
    pending = run.cluster(pending_name)
    if pending is not None:
        backends.append((f"{pending_name}-serve-svc", pending_weight, run.serve_port(pending)))
    desired: dict[str, Any] = dict(build_httproute(service=run.service, backends=backends))
    existing = _get(run, kinds.HTTP_ROUTE, httproute_name(run))
    if existing is not None and not ours(run, existing):
        foreign(run, "HTTPRoute", httproute_name(run), Action.UPDATE)
        return None
    return _create_or_update(run, kinds.HTTP_ROUTE, "HTTPRoute", desired, existing, httproute_equal)


def _create_or_update(
    run: ServiceRun,
    kind: kinds.ResourceKind,
    what: str,
    desired: Object,
    existing: Object | None,
    equal: Callable[[Object, Object], bool],
) -> Object:
    """Create, or update the spec when ``equal`` (KubeRay's IsGatewayEqual /
    IsHTTPRouteEqual: only the fields the controller sets) says it differs. A whole-spec
    comparison would see the API server's defaults (a listener's ``allowedRoutes``, a
    backendRef's ``group``/``kind``, a parentRef's ``group``/``kind``) and update, with
    an event, on every pass."""
    client, name = run.tools.client, str(desired["metadata"]["name"])
    if existing is None:
        try:
            created: Object = client.create(desired)
        except ApiError as exc:
            run.event(
                "Warning",
                f"FailedToCreate{what}",
                f"Failed to create the {what} {run.namespace}/{name}: {exc}",
                Action.CREATE,
            )
            raise
        run.event(
            "Normal", f"Created{what}", f"Created the {what} {run.namespace}/{name}", Action.CREATE
        )
        return created
    if equal(existing, desired):
        return existing
    try:
        updated: Object = client.update({**existing, "spec": desired["spec"]})
    except ApiError as exc:
        run.event(
            "Warning",
            f"FailedToUpdate{what}",
            f"Failed to update the {what} {run.namespace}/{name}: {exc}",
            Action.UPDATE,
        )
        raise
    run.event(
        "Normal", f"Updated{what}", f"Updated the {what} {run.namespace}/{name}", Action.UPDATE
    )
    return updated


def traffic_weights(run: ServiceRun, pending_ready: bool) -> tuple[int, int]:
    """(active, pending) weights: one step toward the side that gains, once
    ``intervalSeconds`` have passed since that side's last move."""
    active, pending = run.side(ACTIVE), run.side(PENDING)
    active_weight = int(active.get("trafficRoutedPercent", 100))
    pending_weight = int(pending.get("trafficRoutedPercent", 0))
    options = _options(run)
    if options is None:
        return active_weight, pending_weight
    pending_capacity = int(pending.get("targetCapacity", 0))
    active_capacity = int(active.get("targetCapacity", 100))
    rolling_back = run.is_true(ROLLBACK_IN_PROGRESS)
    if (pending_weight == pending_capacity and not rolling_back) or (
        rolling_back and active_weight == active_capacity
    ):
        return active_weight, pending_weight
    last = (active if rolling_back else pending).get("lastTrafficMigratedTime")
    interval = datetime.timedelta(seconds=int(options.interval_seconds))
    moved = parse_time(last)
    due = moved is None or run.now() - moved >= interval
    if not due:
        return active_weight, pending_weight
    step = int(options.step_size_percent)
    if rolling_back:
        active_weight = traffic_step(active_weight, active_capacity, step)
        pending_weight = 100 - active_weight
    elif pending_ready:
        pending_weight = traffic_step(pending_weight, pending_capacity, step)
        active_weight = 100 - pending_weight
    return active_weight, pending_weight


def weights_of(route: Object | None, run: ServiceRun) -> tuple[int, int]:
    """The weights the HTTPRoute carries for the active and pending clusters (-1: none)."""
    active_weight = pending_weight = -1
    if route is None:
        return active_weight, pending_weight
    names = {
        f"{run.cluster_name(ACTIVE)}-serve-svc": "active",
        f"{run.cluster_name(PENDING)}-serve-svc": "pending",
    }
    for rule in (route.get("spec") or {}).get("rules") or ():
        for backend in rule.get("backendRefs") or ():
            side = names.get(str(backend.get("name")))
            weight = int(backend.get("weight", 1))
            if side == "active" and run.cluster_name(ACTIVE):
                active_weight = weight
            elif side == "pending" and run.cluster_name(PENDING):
                pending_weight = weight
    return active_weight, pending_weight


def reconcile_rollback_state(run: ServiceRun, active: Object, pending: Object) -> None:
    """Goal hash back to the active cluster's: roll back; to the pending one's: go on;
    anything else mid-upgrade: roll back to the active cluster first."""
    target = run.goal_hash
    rolling_back = run.is_true(ROLLBACK_IN_PROGRESS)
    if target == cluster_hash(active):
        if not rolling_back:
            run.set_condition(
                ROLLBACK_IN_PROGRESS,
                "True",
                "DesiredClusterSpecChanged",
                "Goal state reverted to original cluster, rolling back.",
            )
        return
    if target == cluster_hash(pending):
        if rolling_back:
            run.remove_condition(ROLLBACK_IN_PROGRESS)
        return
    if not rolling_back:
        run.set_condition(
            ROLLBACK_IN_PROGRESS,
            "True",
            "DesiredClusterSpecChanged",
            "Goal state changed mid-upgrade, rolling back to original cluster.",
        )


def rollback_complete(run: ServiceRun, pending: Object | None) -> bool:
    active, side = run.side(ACTIVE), run.side(PENDING)
    healthy = pending is not None and is_true(
        (pending.get("status") or {}).get("conditions") or (), HEAD_POD_READY
    )
    return (
        active.get("targetCapacity") == 100
        and active.get("trafficRoutedPercent") == 100
        and (
            not healthy
            or (side.get("targetCapacity") == 0 and side.get("trafficRoutedPercent") == 0)
        )
    )


def upgrade_complete(run: ServiceRun, pending: Object | None) -> bool:
    """KubeRay's IsIncrementalUpgradeComplete: the active side holds no capacity and the
    pending one all the traffic."""
    active, side = run.side(ACTIVE), run.side(PENDING)
    return (
        pending is not None
        and active.get("targetCapacity") == 0
        and side.get("trafficRoutedPercent") == 100
    )


def in_progress(run: ServiceRun) -> bool:
    return run.incremental and run.is_true(UPGRADE_IN_PROGRESS)
