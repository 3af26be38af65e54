"""The RayCluster controller: KubeRay's ``raycluster_controller.go`` as ordered steps.

One pass over a cluster (``reconcile``):

1. gate steps (``GATE_STEPS``): managed elsewhere, invalid, GCS FT finalizer flow,
   being deleted; any of them may end the pass;
2. resource steps (``RESOURCE_STEPS``), in order, stopping at the first failure:
   autoscaler ServiceAccount, Role, RoleBinding, Ingress, auth Secret, head Service,
   headless Service, serve Service, RocksDB PVC, pods;
3. the status, computed from the cache and written only when it changed.

Outcomes: a failed step is retried with per-key backoff (after the status recorded
it); a status write that moves a suspension on looks again after 2 s (suspend moves
in several writes, and our own status write starts no pass); otherwise the cluster is
resynced every ``requeue_seconds`` (300), and events start the passes between. A pass
that waits for its own pod creates is started again by the create queue when they are
done, and one waiting for the cache by the pods' events, with the expectations'
timeout as the fallback: no timer polls them (KubeRay's pass does not either).
"""

from __future__ import annotations

import base64
import dataclasses
import logging
import random
import secrets
from collections.abc import Sequence
from typing import Final, Protocol

import pydantic
from prometheus_client import CollectorRegistry

from operator_runtime.api import RayCluster
from operator_runtime.api.labels import CREATED_BY_SELECTOR, POD_SELECTOR, LabelKey, NodeType
from operator_runtime.api.raycluster import SUSPENDING
from operator_runtime.api.reasons import Action, Reason
from operator_runtime.controllers import batchscheduler, workloadscheduling
from operator_runtime.controllers.certmanager import cert_manager_served
from operator_runtime.controllers.clusterstatus import (
    counts_reached,
    only_counts_changed,
    status_changed,
)
from operator_runtime.controllers.ownwrites import OwnWrites
from operator_runtime.controllers.parse_errors import describe_parse_error
from operator_runtime.controllers.raycluster import children, gates, gcsft, mtls, pods, storage
from operator_runtime.controllers.raycluster.creates import CreateQueue
from operator_runtime.controllers.raycluster.metrics import ClusterMetrics
from operator_runtime.controllers.raycluster.options import (
    SHORT_REQUEUE_SECONDS,
    RayClusterOptions,
)
from operator_runtime.controllers.raycluster.podrules import (
    all_running_and_ready,
    live_pods,
    running_and_ready,
    should_delete_pod,
)
from operator_runtime.controllers.raycluster.podwrites import POD_NEEDS
from operator_runtime.controllers.raycluster.run import (
    ClusterCaches,
    ClusterRun,
    ClusterTools,
    ResourceStep,
    Step,
    group_key,
    need,
)
from operator_runtime.controllers.raycluster.status import (
    StatusInputs,
    compute_status,
    provisioned_now,
    suspend_status,
)
from operator_runtime.controllers.rendering import gates_of
from operator_runtime.render import Permission
from operator_runtime.render.workloadscheduling import KUBERNETES_WAS
from operator_runtime.runtime import kinds
from operator_runtime.runtime.cache import BY_OWNER_UID, Cache
from operator_runtime.runtime.clock import Clock
from operator_runtime.runtime.context import ControllerContext
from operator_runtime.runtime.errors import PermanentError, TemporaryError
from operator_runtime.runtime.informer import EventType, Informer
from operator_runtime.runtime.kinds import Object, ResourceKind
from operator_runtime.runtime.ratelimit import TokenBucket
from operator_runtime.runtime.reconcile import (
    WATCHED_METADATA,
    ObjectKey,
    Result,
    Watch,
    metadata_changed,
    own,
    owned,
)

log = logging.getLogger(__name__)
NAME: Final = "raycluster"
EVENT_SOURCE: Final = "raycluster-controller"
CLUSTER_SELECTOR: Final = "ray.io/cluster"

GATE_STEPS: Final[tuple[Step, ...]] = (
    gates.skip_unmanaged,
    gates.validate,
    mtls.refuse_without_cert_manager,
    gcsft.gcs_ft_finalizer,
    gates.stop_if_deleting,
)
RESOURCE_STEPS: Final[tuple[ResourceStep, ...]] = (
    children.reconcile_autoscaler_service_account,
    children.reconcile_autoscaler_role,
    children.reconcile_autoscaler_role_binding,
    children.reconcile_ingress,
    children.reconcile_auth_secret,
    children.reconcile_head_service,
    children.reconcile_headless_service,
    children.reconcile_serve_service,
    storage.reconcile_gcs_storage_pvc,
    pods.reconcile_pods,
)
# Every cache the controller reads: ClusterCaches field -> (kind, label selector).
WATCHED: Final[dict[str, tuple[ResourceKind, str | None]]] = {
    "clusters": (kinds.RAY_CLUSTER, None),
    "pods": (kinds.POD, POD_SELECTOR),
    "services": (kinds.SERVICE, None),
    "jobs": (kinds.JOB, CREATED_BY_SELECTOR),
    "service_accounts": (kinds.SERVICE_ACCOUNT, CREATED_BY_SELECTOR),
    "roles": (kinds.ROLE, CREATED_BY_SELECTOR),
    "role_bindings": (kinds.ROLE_BINDING, CREATED_BY_SELECTOR),
    "ingresses": (kinds.INGRESS, CREATED_BY_SELECTOR),
    "pvcs": (kinds.PERSISTENT_VOLUME_CLAIM, CLUSTER_SELECTOR),
}
COUNTS_WRITE_INTERVAL: Final = SHORT_REQUEUE_SECONDS
"""A status whose only change is the replica counts is written at most every 2 s per
cluster, KubeRay's requeue period (the next pass, at most ``SHORT_REQUEUE_SECONDS``
later, writes it)."""
COUNT_WRITES_PER_SECOND: Final = 5.0
"""Status writes whose only change is the replica counts, for all clusters together
(burst ``COUNT_WRITES_BURST``). Per cluster, every 2 s is little; for a hundred clusters
whose pods turn ready together it was 50 writes/s, half the default request budget,
taken from the creates still to make (benchmarks/README.md). KubeRay's long passes wrote
about 4/s in the same run."""
COUNT_WRITES_BURST: Final = 10
STATUS_NEEDS: Final = (need("ray.io", "rayclusters/status", ("update",), "status"),)
PERMISSIONS: Final[tuple[Permission, ...]] = (
    *(
        need(kind.group, kind.plural, ("list", "watch"), "informer cache")
        for kind, _ in WATCHED.values()
    ),
    *gcsft.GCS_FT_NEEDS,
    *children.AUTOSCALER_SERVICE_ACCOUNT_NEEDS,
    *children.AUTOSCALER_ROLE_NEEDS,
    *children.AUTOSCALER_ROLE_BINDING_NEEDS,
    *children.INGRESS_NEEDS,
    *children.AUTH_SECRET_NEEDS,
    *children.SERVICE_NEEDS,
    *storage.PVC_NEEDS,
    *POD_NEEDS,
    *mtls.MTLS_NEEDS,
    *batchscheduler.needs(NAME),
    *workloadscheduling.needs(NAME),
    *STATUS_NEEDS,
)
"""Everything the steps use: the permission table (render/operator_permissions.py) is
generated from it."""


def _new_token() -> str:
    return base64.b64encode(secrets.token_bytes(32)).decode()


def options_from(context: ControllerContext) -> RayClusterOptions:
    return RayClusterOptions.from_settings(
        context.settings, gates_of(context), context.configuration
    )


class CountWrites:
    """When a status whose only change is the replica counts may be written: pods
    turning ready one by one make one write per ``COUNTS_WRITE_INTERVAL`` per cluster,
    and at most ``COUNT_WRITES_PER_SECOND`` for all clusters together."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._bucket = TokenBucket(COUNT_WRITES_PER_SECOND, COUNT_WRITES_BURST, clock=clock)
        self._written_at: dict[ObjectKey, float] = {}
        """When each cluster's status was last written (the clock's monotonic time)."""

    def may_write(self, key: ObjectKey, *, reached: bool = False) -> bool:
        """``reached``: the counts reach their target in this write (``counts_reached``);
        it need not wait out the cluster's interval, but still takes from the shared
        budget. Without it the write that ended a 0 -> 500 scale-up came up to 2 s late,
        after one made while the last pods turned ready (benchmarks/README.md)."""
        last = self._written_at.get(key)
        recent = last is not None and self._clock.monotonic() - last < COUNTS_WRITE_INTERVAL
        if recent and not reached:
            return False
        return self._bucket.try_take()

    def written(self, key: ObjectKey) -> None:
        """Any status write of ``key`` (counts or not) starts its interval again."""
        self._written_at[key] = self._clock.monotonic()

    def forget(self, key: ObjectKey) -> None:
        self._written_at.pop(key, None)


class KeyQueue(Protocol):
    """What the controller uses of the manager's work queue."""

    def add(self, key: ObjectKey, source: str = ...) -> None: ...

    def add_after(self, key: ObjectKey, delay: float, source: str = ...) -> None: ...

    def cancel_after(self, key: ObjectKey, source: str) -> None: ...


COUNTS_ONLY_SOURCE: Final = "Pod/MODIFIED, counts only"
"""The trigger of a pass put off because its pod event could change only the counts."""


class RayClusterController:
    """``Controller`` for ``ray.io/v1`` RayClusters."""

    name = NAME

    def __init__(
        self,
        context: ControllerContext,
        options: RayClusterOptions | None = None,
        *,
        metrics_registry: CollectorRegistry | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.options = options or options_from(context)
        if self.options.cert_manager_available is None and self.options.gates.ray_cluster_mtls:
            served = cert_manager_served(context.client)
            self.options = dataclasses.replace(self.options, cert_manager_available=served)
        self._queue: KeyQueue | None = None
        """The manager's queue of this controller (``bind_queue``)."""
        self._count_writes = CountWrites(context.clock)
        self.own_writes = OwnWrites()
        """Our last status write per cluster, while the cache has not seen it."""
        self._projection = self.options.pod_projection
        informers = {
            field: self._informer(context, kind, selector)
            for field, (kind, selector) in WATCHED.items()
        }
        scheduler = self.options.render.batch_scheduler
        self._pod_group_kind = batchscheduler.pod_group_kind(scheduler)
        pod_groups = None
        if self._pod_group_kind is not None:
            batchscheduler.require_served(context.client, scheduler, self._pod_group_kind)
            pod_groups = self._informer(context, self._pod_group_kind, None).cache
        self._workload_kinds: tuple[ResourceKind, ...] = ()
        scheduling = None
        if scheduler == KUBERNETES_WAS:
            workloadscheduling.require_served(context.client)
            self._workload_kinds = workloadscheduling.KINDS
            workloads, groups = (
                self._informer(context, kind, None).cache for kind in self._workload_kinds
            )
            scheduling = workloadscheduling.SchedulingCaches(workloads, groups)
        caches = ClusterCaches(
            **{field: informer.cache for field, informer in informers.items()},
            pod_groups=pod_groups,
            workload_scheduling=scheduling,
        )
        self.metrics = ClusterMetrics(caches.clusters)
        if metrics_registry is not None:
            self.metrics.register(metrics_registry)
        # The context picks the timeout: its informers' stall detection plus a relist,
        # so a create event held up by a stalled watch arrives before it lapses.
        expectations = context.expectations()
        self.tools = ClusterTools(
            client=context.client,
            caches=caches,
            events=context.events(EVENT_SOURCE),
            expectations=expectations,
            creates=CreateQueue(expectations, on_idle=self._creates_done),
            clock=context.clock,
            options=self.options,
            metrics=self.metrics,
            rng=rng or random.Random(),
            new_token=_new_token,
        )
        # Registered before the manager's own handlers, so a pass that a pod's deletion
        # starts finds its create already reflected.
        informers["pods"].add_handler(self._pod_gone)

    def _informer(
        self, context: ControllerContext, kind: ResourceKind, selector: str | None
    ) -> Informer:
        projection = self._projection if kind == kinds.POD else None
        return context.informers.get(kind, label_selector=selector, projection=projection)

    def _pod_gone(self, event: EventType, pod: Object, _old: Object | None) -> None:
        """A pod created and deleted between two passes is never seen in the cache; its
        deletion event is what shows that its create was reflected."""
        if event == "DELETED":
            metadata = pod["metadata"]
            self.tools.expectations.observe_gone(metadata.get("namespace", ""), metadata["name"])

    def bind_queue(self, queue: KeyQueue) -> None:
        """The manager hands over its queue: the create queue wakes a cluster with it,
        and a pod event that can change only the counts is put off with it."""
        self._queue = queue

    def _creates_done(self, group: str) -> None:
        """A group's queued creates all ran: its cluster's next pass looks at them."""
        queue = self._queue
        if queue is not None:
            namespace, name, _ = group.split("/", 2)
            queue.add(ObjectKey(namespace, name), "creates_done")

    def watches(self) -> Sequence[Watch]:
        ray = kinds.RAY_CLUSTER
        result = [own(ray, predicate=metadata_changed)]
        for field, (kind, selector) in WATCHED.items():
            if field == "clusters":
                continue
            if kind == kinds.POD:
                result.append(
                    owned(
                        kind,
                        ray,
                        label_selector=selector,
                        projection=self._projection,
                        predicate=self._pod_event_matters,
                    )
                )
            else:
                result.append(
                    owned(kind, ray, label_selector=selector, predicate=self._child_event_matters)
                )
        if self._pod_group_kind is not None:  # a gang deleted by hand is made again at once
            result.append(owned(self._pod_group_kind, ray))
        result.extend(owned(kind, ray) for kind in self._workload_kinds)  # and so is a Workload
        return result

    def _creates_pending(self, namespace: str, owners: Sequence[str]) -> bool:
        """Whether a cluster of ``owners`` has pod creates queued or running: the queue
        starts its pass once they are done (``_creates_done``), and that pass reads every
        event that came meanwhile from the cache."""
        if self._queue is None:  # no wake-up from the queue
            return False
        creates = self.tools.creates
        return any(creates.busy_under(group_key(namespace, owner, "")) for owner in owners)

    def _child_event_matters(self, event: EventType, obj: Object, _old: Object | None) -> bool:
        """Whether an event of a Service (or another child but pods) may start a pass:
        not while its cluster's pod creates run, which start one when they are done. A
        new cluster's head Service, made by the pass that queued the workers, otherwise
        started a pass of its own between that pass and the one the creates start."""
        if event == "DELETED":
            return True
        metadata = obj.get("metadata") or {}
        namespace = str(metadata.get("namespace") or "")
        owners = [str(ref.get("name") or "") for ref in _cluster_owner_refs(metadata)]
        return not (owners and self._creates_pending(namespace, owners))

    def _pod_event_matters(self, event: EventType, pod: Object, old: Object | None) -> bool:
        """Whether a pod's event may change what a pass does.

        Not when its cluster is not in the cache: the cluster is gone (a deleted
        cluster's pods going one by one made a pass each, 5,000 for 20 x 100 while the
        garbage collector deleted them), or not seen yet, and then its own event starts
        the pass. Not for a pod's create or update while its cluster still has creates
        queued or running: the group waits for them anyway (its expectations), and the
        queue starts the cluster's next pass once they are done (``_creates_done``).
        Without this, a scale-up of N pods made about 2N passes, one per event, where the
        worker had gathered them before; and a new cluster's head pod, created in the
        pass that queued the workers, started passes of its own meanwhile. An update
        that can change only the counts (``_only_counts``) starts a pass within
        ``COUNTS_WRITE_INTERVAL`` instead of at once. A deletion of a cached cluster's pod
        always passes."""
        metadata = pod.get("metadata") or {}
        namespace = str(metadata.get("namespace") or "")
        owners = [str(ref.get("name") or "") for ref in _cluster_owner_refs(metadata)]
        clusters = self.tools.caches.clusters
        if owners and all(clusters.get(namespace, owner) is None for owner in owners):
            return False
        if event == "DELETED":
            return True
        if self._creates_pending(namespace, owners):
            return False
        labels = metadata.get("labels") or {}
        group = labels.get(LabelKey.GROUP.value)
        if labels.get(LabelKey.NODE_TYPE.value) != NodeType.WORKER or not group:
            return True
        cluster = str(labels.get(LabelKey.CLUSTER.value) or "")
        key = group_key(namespace, cluster, str(group))
        queue = self._queue
        if queue is None:  # no wake-up from the queue: only queued creates gate
            return not self.tools.creates.queued(key)
        if self.tools.creates.busy(key):
            return False
        if event != "MODIFIED" or old is None:
            return True
        if not _only_counts(pod, old, clusters_pods(self.tools.caches.pods, metadata)):
            return True
        for owner in owners:  # the counts, within the interval they are written in anyway
            queue.add_after(ObjectKey(namespace, owner), COUNTS_WRITE_INTERVAL, COUNTS_ONLY_SOURCE)
        return False

    def close(self) -> None:
        self.tools.creates.close()

    def reconcile(self, key: ObjectKey) -> Result:
        if self._queue is not None:
            # A pass put off by a pod event that could change only the counts is this
            # one: it reads that pod from the cache, so the timer would start a pass
            # with nothing left to do (one per cluster in most scale-ups).
            self._queue.cancel_after(key, COUNTS_ONLY_SOURCE)
        raw = self.tools.caches.clusters.get(key.namespace, key.name)
        if raw is None:
            self.own_writes.forget(key)
            self._count_writes.forget(key)
            self.tools.expectations.forget_prefix(f"{key.namespace}/{key.name}/")
            self.metrics.forget(key.namespace, key.name)
            return Result()
        raw = self.own_writes.fresh(key, raw)
        if gcsft.holds_deletion(raw):
            # Before parsing and validation: nothing wrong with the object may keep
            # its deletion from ending.
            return gcsft.finish_deletion(self.tools, key, raw)
        try:
            cluster = RayCluster.model_validate(raw)
        except pydantic.ValidationError as exc:
            self.tools.events.record(
                raw,
                "Warning",
                Reason.INVALID_SPEC.value,
                f"The RayCluster cannot be read: {describe_parse_error(exc)}",
                Action.VALIDATE.value,
            )
            return Result()
        run = ClusterRun(self.tools, key, raw, cluster)
        for gate in GATE_STEPS:
            outcome = gate(run)
            if outcome is not None:
                return outcome
        for step in RESOURCE_STEPS:
            try:
                step(run)
            except Exception as exc:  # recorded in the status, then retried with backoff
                run.step_error = exc
                break
        soon = self._write_status(run)
        if isinstance(run.step_error, PermanentError):
            raise run.step_error  # e.g. a name no object can have: retrying cannot help
        if run.step_error is not None:
            raise TemporaryError(f"{step.__name__}: {run.step_error}") from run.step_error
        return Result(requeue_after=self._next_look(run, soon))

    def _next_look(self, run: ClusterRun, soon: bool) -> float:
        """Seconds until this cluster's next pass, if nothing else starts one sooner;
        ``soon``: the status step asks for one within ``SHORT_REQUEUE_SECONDS``."""
        if soon or run.more_to_create:
            return SHORT_REQUEUE_SECONDS
        if run.waiting_on_cache and self._queue is None:
            return SHORT_REQUEUE_SECONDS  # nothing wakes it (a controller outside a manager)
        # Events (or the create queue) start the next pass; the timer only covers an
        # event that never came (an expectation lapsing, a Terminating pod that never
        # goes and whose replica index hold ends).
        if run.recheck_in is None:
            return self.options.requeue_seconds
        return min(max(run.recheck_in, SHORT_REQUEUE_SECONDS), self.options.requeue_seconds)

    def _write_status(self, run: ClusterRun) -> bool:
        """Write the status if a reader would see a difference; whether to look again
        soon: a write was put off, or the one made moves a suspension on, whose next
        step only a pass takes (``suspend_moved``)."""
        if run.step_error is None and run.creates_unseen and self._queue is not None:
            # The pods just created (or still queued) are not in the cache yet, so this
            # status would be out of date before it is written: KubeRay, whose pass makes
            # its creates first, writes once after them, and so do we, from the pass that
            # sees them (their events or the queue's wake-up start it). Writing here made
            # a new cluster's first status say "Head Pod not found": one more write per
            # cluster, and a pass of its RayJob or RayService for it.
            return False
        tools, raw = self.tools, run.raw
        old: Object = raw.get("status") or {}
        now = tools.clock.now()
        try:
            new = compute_status(
                StatusInputs(
                    cluster=run.cluster,
                    old_status=old,
                    generation=int(raw["metadata"].get("generation") or 0),
                    pods=run.ray_pods(),
                    head_services=children.head_services(run),
                    step_error=run.step_error,
                    conditions_gate=self.options.gates.ray_cluster_status_conditions,
                    now=now,
                )
            )
        except Exception:
            if run.step_error is not None:
                return False  # the step's error is the one to report
            raise
        if not status_changed(old, new):
            return False
        if run.step_error is None and only_counts_changed(old, new):
            if run.more_to_create or run.waiting_on_cache:
                # Mid scale-up the counts change with every pass; KubeRay, creating every
                # pod in one pass, writes them about once. So do we: the pass that ends
                # the scale-up (it comes soon, see ``reconcile``) writes them.
                return False
            if not self._count_writes.may_write(run.key, reached=counts_reached(old, new)):
                return True  # look again soon; a later pass writes them
        written = tools.client.update_status({**raw, "status": new})
        self.own_writes.wrote(run.key, raw, written)
        self._count_writes.written(run.key)
        if provisioned_now(old, new) and run.cluster.metadata.creation_timestamp is not None:
            elapsed = (now - run.cluster.metadata.creation_timestamp).total_seconds()
            self.metrics.observe_provisioned(run.namespace, run.name, run.uid, elapsed)
        return suspend_moved(old, new)


def suspend_moved(old: Object, new: Object) -> bool:
    """Whether a status written as ``new`` over ``old`` moves a suspension on: Suspending
    set (the next pass deletes the pods) or a suspend condition changed (Suspended
    cleared on resume: the next pass creates them). Nothing else but that pass would
    take the step: our own status write starts no pass. KubeRay looks again 2 s after
    every status write; any other write waits for events (pods turning ready, a spec
    change) or the resync, which was one more pass per write at scale."""
    before = suspend_status(old.get("conditions") or ())
    after = suspend_status(new.get("conditions") or ())
    return after == SUSPENDING or after != before


def clusters_pods(pods: Cache, metadata: Object) -> list[Object]:
    """The cached pods sharing an owner with the pod of ``metadata`` (its cluster's)."""
    uids = [str(ref.get("uid") or "") for ref in _cluster_owner_refs(metadata)]
    return [pod for uid in uids if uid for pod in pods.by_index(BY_OWNER_UID, uid)]


def _cluster_owner_refs(metadata: Object) -> list[Object]:
    """The pod's controlling RayCluster references (its cluster, by name and UID)."""
    return [
        ref
        for ref in metadata.get("ownerReferences") or ()
        if ref.get("controller") and ref.get("kind") == kinds.RAY_CLUSTER.kind
    ]


def _only_counts(pod: Object, old: Object, siblings: list[Object]) -> bool:
    """Whether a worker pod's update can change nothing but its cluster's replica counts,
    which are written at most every ``COUNTS_WRITE_INTERVAL`` anyway: its metadata is
    the same, it is running and ready and need not be replaced, and its cluster is not
    all ready with it (so neither ``state`` nor a condition can change). A hundred
    workers turning ready one by one then make a pass every 2 s, not one each; the
    update that makes the cluster ready still starts its pass at once."""
    new_meta, old_meta = pod.get("metadata") or {}, old.get("metadata") or {}
    if any(new_meta.get(k) != old_meta.get(k) for k in WATCHED_METADATA):
        return False
    if not running_and_ready(pod) or should_delete_pod(pod, "worker").delete:
        return False
    return not all_running_and_ready(live_pods(siblings))
