"""Traffic switching for a RayService: ``<s>-head-svc`` and ``<s>-serve-svc`` pointed at
the ready cluster (their clusterIP kept), and the pending cluster promoted to active once
the Services, or with an incremental upgrade the HTTPRoute's weights, have moved to it.
The Gateway and HTTPRoute steps themselves are ``traffic.py``'s."""

from __future__ import annotations

import logging
from typing import Any, Final

from operator_runtime.api.labels import LabelKey
from operator_runtime.api.rayservice import ROLLBACK_IN_PROGRESS, UPGRADE_IN_PROGRESS
from operator_runtime.api.reasons import Action
from operator_runtime.controllers.rayservice import traffic
from operator_runtime.controllers.rayservice.run import (
    ACTIVE,
    PENDING,
    ServiceRun,
    need,
)
from operator_runtime.render import build_rayservice_head_service, build_rayservice_serve_service
from operator_runtime.runtime import kinds
from operator_runtime.runtime.errors import AlreadyExists, ApiError, NotFound
from operator_runtime.runtime.kinds import Object

log = logging.getLogger(__name__)

NEEDS: Final = (
    need(
        "",
        "services",
        ("get", "create", "update", "delete"),
        "<s>-head-svc and <s>-serve-svc, switched to the ready cluster; deleted on suspend",
    ),
)


# -- Services --------------------------------------------------------------------------


def switch_services(run: ServiceRun, cluster: Object) -> tuple[Object, Object]:
    """Point ``<s>-head-svc`` and ``<s>-serve-svc`` at ``cluster`` (clusterIP kept)."""
    model = run.cluster_model(cluster)
    options = run.tools.options.render
    head = _reconcile_service(
        run,
        dict(build_rayservice_head_service(service=run.service, cluster=model, options=options)),
    )
    serve = _reconcile_service(
        run,
        dict(build_rayservice_serve_service(service=run.service, cluster=model, options=options)),
    )
    return head, serve


def _reconcile_service(run: ServiceRun, desired: dict[str, Any]) -> Object:
    name = str(desired["metadata"]["name"])
    client = run.tools.client
    existing = run.tools.caches.services.get(run.namespace, name)
    if existing is None:
        try:
            existing = client.get(kinds.SERVICE, name, run.namespace)
        except NotFound:
            existing = None
    if existing is None:
        try:
            created: Object = client.create(desired)
        except AlreadyExists:
            return client.get(kinds.SERVICE, name, run.namespace)
        except ApiError as exc:
            run.event(
                "Warning",
                "FailedToCreateService",
                f"Failed to create the service {run.namespace}/{name}, {exc}",
                Action.CREATE,
            )
            raise
        run.event(
            "Normal", "CreatedService", f"Created the service {run.namespace}/{name}", Action.CREATE
        )
        return created
    if _selected_cluster(existing) == _selected_cluster(desired):
        return existing
    spec = dict(desired["spec"])
    if (existing.get("spec") or {}).get("clusterIP"):
        spec["clusterIP"] = existing["spec"]["clusterIP"]
    try:
        updated: Object = client.update({**existing, "spec": spec})
    except ApiError as exc:
        run.event(
            "Warning",
            "FailedToUpdateService",
            f"Failed to update the service {run.namespace}/{name}, {exc}",
            Action.UPDATE,
        )
        raise
    run.event(
        "Normal", "UpdatedService", f"Updated the service {run.namespace}/{name}", Action.UPDATE
    )
    return updated


def _selected_cluster(service: Object) -> str:
    return str(((service.get("spec") or {}).get("selector") or {}).get(LabelKey.CLUSTER, ""))


# -- promotion -------------------------------------------------------------------------


def promote(run: ServiceRun, services: tuple[Object, Object], pending: Object | None) -> bool:
    """Make the pending cluster the active one once traffic is on it; True when the
    Services point at the pending cluster."""
    head, serve = services
    points_to = _selected_cluster(head)
    if points_to != _selected_cluster(serve):
        raise RuntimeError(f"{run.key}: head and serve Services point at different clusters")
    active_name, pending_name = run.cluster_name(ACTIVE), run.cluster_name(PENDING)
    if points_to not in (active_name, pending_name):
        raise RuntimeError(
            f"{run.key}: the Services point at {points_to}, neither the "
            f"active ({active_name}) nor the pending ({pending_name}) cluster"
        )
    if run.incremental:
        if run.is_true(UPGRADE_IN_PROGRESS):
            promote = not run.is_true(ROLLBACK_IN_PROGRESS) and traffic.upgrade_complete(
                run, pending
            )
        else:
            promote = not active_name and bool(pending_name)
    else:
        promote = active_name != points_to
    if promote:
        log.info("%s: promoting %s (was %s)", run.key, pending_name, active_name or "none")
        run.status[ACTIVE] = run.status.get(PENDING) or {}
        run.status[PENDING] = {}
    return points_to == pending_name
