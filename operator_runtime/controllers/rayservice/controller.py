"""The RayService controller: KubeRay's ``rayservice_controller.go``.

One pass over a RayService (``reconcile``):

1. someone else manages it: hands off; serve configs of clusters it no longer uses are
   forgotten;
2. dangling clusters (neither active nor pending) are stamped with a deletion time and
   deleted when it comes (``clusters.py``);
3. being deleted: the finalizer goes once no cluster is left; a new RayService gets the
   finalizer first;
4. invalid: a Warning event and Ready=False/ValidationFailed;
5. suspend (``suspend.py``), and a terminal InitializingTimeout;
6. the clusters: create the pending one, update in place where the hash allows;
7. incremental upgrade: the rollback rule; the head's ``ray.io/serve`` label; Serve on
   the pending and active clusters; the per-cluster Services, Gateway and HTTPRoute;
8. ``<s>-head-svc``/``<s>-serve-svc`` switched to the ready cluster and the pending
   cluster promoted (``switch.py``), then the status (``status.py``).

Every pass comes back in 2 s (Serve is polled).
"""

from __future__ import annotations

import copy
import logging
import random
from collections.abc import Sequence
from typing import Any, Final

import pydantic
from prometheus_client import CollectorRegistry

from operator_runtime.api import InvalidObjectError, RayService, validate_rayservice
from operator_runtime.api.finalizers import Finalizer
from operator_runtime.api.labels import POD_SELECTOR
from operator_runtime.api.rayservice import READY, SUSPENDED, UPGRADE_IN_PROGRESS
from operator_runtime.api.reasons import Action
from operator_runtime.controllers import dashboards, finalizers
from operator_runtime.controllers.dashboards import Dashboards
from operator_runtime.controllers.managedby import managed_elsewhere
from operator_runtime.controllers.ownwrites import OwnWrites
from operator_runtime.controllers.parse_errors import describe_parse_error
from operator_runtime.controllers.rayservice import (
    clusters,
    serve,
    status,
    suspend,
    switch,
    traffic,
)
from operator_runtime.controllers.rayservice.metrics import ServiceMetrics
from operator_runtime.controllers.rayservice.options import RayServiceOptions
from operator_runtime.controllers.rayservice.run import (
    ACTIVE,
    CONTROLLER,
    PENDING,
    ServeConfigCache,
    ServiceCaches,
    ServiceRun,
    ServiceTools,
    need,
)
from operator_runtime.controllers.rendering import gates_of
from operator_runtime.render import Permission
from operator_runtime.runtime import kinds
from operator_runtime.runtime.clock import format_time
from operator_runtime.runtime.context import ControllerContext
from operator_runtime.runtime.kinds import ResourceKind
from operator_runtime.runtime.reconcile import (
    ObjectKey,
    Result,
    Watch,
    metadata_changed,
    own,
    owned,
)

log = logging.getLogger(__name__)
NAME: Final = CONTROLLER
EVENT_SOURCE: Final = "rayservice-controller"
FINALIZER: Final = Finalizer.RAYSERVICE.value
SERVE_SELECTOR: Final = "ray.io/serve"
"""Serve Services carry it, and their EndpointSlices copy it: only those are cached."""
_INVALID: Final = {
    "InvalidRayServiceMetadata": "InvalidRayServiceMetadata",
    "InvalidRayServiceSpec": "InvalidRayServiceSpec",
    "InvalidRayServiceStatus": "InvalidRayServiceSpec",
}
WATCHED: Final[dict[str, tuple[ResourceKind, str | None]]] = {
    "rayservices": (kinds.RAY_SERVICE, None),
    "clusters": (kinds.RAY_CLUSTER, None),
    "services": (kinds.SERVICE, None),
    "pods": (kinds.POD, POD_SELECTOR),
    "endpoint_slices": (kinds.ENDPOINT_SLICE, SERVE_SELECTOR),
}
PERMISSIONS: Final[tuple[Permission, ...]] = (
    *(
        need(kind.group, kind.plural, ("list", "watch"), "informer cache")
        for kind, _ in WATCHED.values()
    ),
    need("ray.io", "rayservices", ("patch",), "the finalizer"),
    need("ray.io", "rayservices/status", ("update",), "status"),
    need("ray.io", "rayservices/finalizers", ("update",), "owner references that block deletion"),
    *clusters.NEEDS,
    *serve.NEEDS,
    *switch.NEEDS,
    *status.NEEDS,
    *traffic.NEEDS,
    *dashboards.needs(CONTROLLER),
)


class RayServiceController:
    """``Controller`` for ``ray.io/v1`` RayServices."""

    name = NAME

    def __init__(
        self,
        context: ControllerContext,
        options: RayServiceOptions | None = None,
        *,
        metrics_registry: CollectorRegistry | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.options = options or RayServiceOptions.from_settings(
            context.settings, gates_of(context), context.configuration
        )
        caches = ServiceCaches(**context.caches(WATCHED))
        self.own_writes = OwnWrites()
        """Our last status write per RayService, while the cache has not seen it."""
        self.metrics = ServiceMetrics(caches.rayservices)
        if metrics_registry is not None:
            self.metrics.register(metrics_registry)
        self.tools = ServiceTools(
            client=context.client,
            caches=caches,
            events=context.events(EVENT_SOURCE),
            clock=context.clock,
            options=self.options,
            metrics=self.metrics,
            dashboards=Dashboards.from_context(context),
            rng=rng or random.Random(),
            serve_configs=ServeConfigCache(self.options.serve_config_cache_size),
        )

    def watches(self) -> Sequence[Watch]:
        owner = kinds.RAY_SERVICE
        return [
            own(owner, predicate=metadata_changed),
            owned(kinds.RAY_CLUSTER, owner),
            owned(kinds.SERVICE, owner),
        ]

    def close(self) -> None:
        """At shutdown: the connections to the heads."""
        self.tools.dashboards.close()

    def reconcile(self, key: ObjectKey) -> Result:
        tools = self.tools
        raw = tools.caches.rayservices.get(key.namespace, key.name)
        if raw is None:
            tools.serve_configs.forget(f"{key.namespace}/{key.name}")
            self.own_writes.forget(key)
            return Result()
        raw = self.own_writes.fresh(key, raw)
        if managed_elsewhere(key, raw):
            return Result()
        again = Result(requeue_after=self.options.requeue_seconds)
        try:
            service = RayService.model_validate(raw)
        except pydantic.ValidationError as exc:
            if raw["metadata"].get("deletionTimestamp"):
                # Nothing wrong with the object may keep its deletion from ending: its
                # clusters go by garbage collection.
                finalizers.set_finalizer(
                    tools.client, kinds.RAY_SERVICE, raw, FINALIZER, present=False
                )
                return Result()
            tools.events.record(
                raw,
                "Warning",
                "InvalidRayServiceSpec",
                f"The RayService cannot be read: {describe_parse_error(exc)}",
                Action.VALIDATE.value,
            )
            return Result()
        deleting = bool(raw["metadata"].get("deletionTimestamp"))
        if not deleting and FINALIZER not in finalizers.finalizers(raw):
            # The pass goes on from the patched object. KubeRay's pass ends here and its
            # next one comes from the back of the queue: in a burst of 100 RayServices no
            # cluster was created before every RayService had its finalizer.
            patched = finalizers.set_finalizer(
                tools.client, kinds.RAY_SERVICE, raw, FINALIZER, present=True
            )
            self.own_writes.wrote(key, raw, patched)
            raw = patched
        run = ServiceRun.start(tools, key, raw, service)
        tools.serve_configs.keep_only(
            run.cache_key, {run.cluster_name(ACTIVE), run.cluster_name(PENDING)}
        )
        dangling = clusters.clean_up_dangling(run)
        if deleting:
            if dangling:
                return again
            if FINALIZER in finalizers.finalizers(raw):
                finalizers.set_finalizer(
                    tools.client, kinds.RAY_SERVICE, raw, FINALIZER, present=False
                )
            return Result()
        if not self._valid(run):
            self._write(run)
            return Result()
        was_suspended = run.is_true(SUSPENDED)
        suspend.handle_suspend(run)
        self._write(run)
        if suspend.operative(run):
            # The pass that reaches Suspended comes back (KubeRay's requeue): the spec may
            # have been unsuspended midway, and this status write wakes nothing.
            return Result() if was_suspended else again
        if status.timed_out(run):
            return again if dangling else Result()
        named = run.cluster_name(PENDING)
        self._serve_pass(run)
        self._write(run)
        if run.cluster_name(PENDING) not in ("", named):
            # The pass named a new pending cluster, and the name is stored now: create
            # it in this pass rather than the next, which KubeRay's does from the back
            # of the queue.
            self._serve_pass(run)
            self._write(run)
        return again

    def _serve_pass(self, run: ServiceRun) -> None:
        active, pending = clusters.reconcile_clusters(run)
        if run.incremental and run.is_true(UPGRADE_IN_PROGRESS):
            if active is None:
                run.event(
                    "Warning",
                    "RollbackImpossible",
                    "Active cluster not found, rollback cannot be initiated",
                    Action.RECONCILE,
                )
            elif pending is not None:
                traffic.reconcile_rollback_state(run, active, pending)
        serve.update_head_serve_label(run, active)
        serve.update_head_serve_label(run, pending)
        active_ready = pending_ready = False
        active_apps: dict[str, Any] | None = None
        pending_apps: dict[str, Any] | None = None
        if pending is not None:
            pending_ready, pending_apps = serve.reconcile_serve(run, pending)
            # Better than KubeRay: the Services move only once the pending cluster has a
            # pod to serve from (an incremental upgrade moves weights on its own checks).
            if pending_ready and not run.incremental:
                pending_ready = serve.has_serve_endpoint(run, pending)
        if active is not None and pending is None:
            if not clusters.should_prepare_new_cluster(run, active, None, False):
                active_ready, active_apps = serve.reconcile_serve(run, active)
        elif active is not None and run.incremental:
            active_ready, active_apps = serve.reconcile_serve(run, active)
        route = None
        if run.incremental:
            traffic.reconcile_cluster_serve_service(run, active)
            traffic.reconcile_cluster_serve_service(run, pending)
            traffic.reconcile_gateway(run)
            route = traffic.reconcile_httproute(run, pending_ready)
        services = None
        if pending_ready or active_ready:
            target = active
            if pending_ready and not traffic.in_progress(run):
                target = pending
            assert target is not None
            services = switch.switch_services(run, target)
        status.calculate_status(run, services, active, pending, active_apps, pending_apps, route)

    def _valid(self, run: ServiceRun) -> bool:
        try:
            validate_rayservice(run.service, self.options.gates)
        except InvalidObjectError as exc:
            run.event(
                "Warning",
                _INVALID.get(exc.event_reason, "InvalidRayServiceSpec"),
                f"{run.namespace}/{run.name}: {exc}",
                Action.VALIDATE,
            )
            run.set_condition(READY, "False", "ValidationFailed", str(exc))
            return False
        return True

    def _write(self, run: ServiceRun) -> None:
        """Write when a reader would see a difference; the pass goes on with the object
        the API server returned (its resourceVersion)."""
        if not status.status_changed(run):
            return
        run.status["lastUpdateTime"] = format_time(run.now())
        written = self.tools.client.update_status({**run.raw, "status": copy.deepcopy(run.status)})
        self.own_writes.wrote(run.key, run.raw, written)
        run.raw = written
