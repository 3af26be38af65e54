"""The RayJob controller: KubeRay's ``rayjob_controller.go``.

One pass over a RayJob (``reconcile``):

1. someone else manages it (``spec.managedBy``): hands off;
2. being deleted: stop the Ray job if it may still run, remove the finalizer; this
   runs on the raw object, before parsing, so nothing wrong with the object can keep
   its deletion from ending;
3. invalid: a Warning event and ``ValidationFailed`` (a fixed spec starts over);
4. the handler of its ``jobDeploymentStatus`` (``states.py``, ``finished.py``);
5. the attempt counters and the retry rule (``backoffLimit``);
6. the status, written only when a reader would see a difference.

Outcomes: a running RayJob is polled every 3 s; errors are retried with backoff.
"""

from __future__ import annotations

import copy
import logging
import random
from collections.abc import Sequence
from typing import Any, Final

import pydantic
from prometheus_client import CollectorRegistry

from operator_runtime.api import InvalidObjectError, RayJob, validate_rayjob
from operator_runtime.api.finalizers import Finalizer
from operator_runtime.api.labels import CREATED_BY_SELECTOR, POD_SELECTOR
from operator_runtime.api.rayjob import (
    TERMINAL_JOB_DEPLOYMENT_STATUSES,
    TERMINAL_JOB_STATUSES,
    JobFailedReason,
)
from operator_runtime.api.reasons import Action, JobReason
from operator_runtime.controllers import batchscheduler, dashboards, finalizers
from operator_runtime.controllers.clusterstatus import status_changed
from operator_runtime.controllers.dashboards import Dashboards
from operator_runtime.controllers.managedby import managed_elsewhere
from operator_runtime.controllers.ownwrites import OwnWrites
from operator_runtime.controllers.parse_errors import describe_parse_error
from operator_runtime.controllers.rayjob import children
from operator_runtime.controllers.rayjob.metrics import JobMetrics
from operator_runtime.controllers.rayjob.options import RayJobOptions
from operator_runtime.controllers.rayjob.run import (
    CONTROLLER,
    JobCaches,
    JobRun,
    JobTools,
    need,
)
from operator_runtime.controllers.rayjob.states import STATES, Handler, on_initializing
from operator_runtime.controllers.rendering import gates_of
from operator_runtime.render import Permission
from operator_runtime.render.batchscheduler import VOLCANO
from operator_runtime.runtime import kinds
from operator_runtime.runtime.context import ControllerContext
from operator_runtime.runtime.errors import NotLeading, ServerError, TransportError
from operator_runtime.runtime.informer import EventType
from operator_runtime.runtime.kinds import Object, ResourceKind
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
EVENT_SOURCE: Final = "rayjob-controller"
FINALIZER: Final = Finalizer.RAYJOB.value
_NOT_RETRIED: Final[tuple[JobFailedReason, ...]] = (
    "DeadlineExceeded",
    "JobStatusCheckTimeoutExceeded",
)
"""Reasons of a Failed attempt that never retries, whatever ``backoffLimit`` says."""
_INVALID: Final = {
    "InvalidRayJobMetadata": JobReason.INVALID_METADATA,
    "InvalidRayJobSpec": JobReason.INVALID_SPEC,
    "InvalidRayJobStatus": JobReason.INVALID_STATUS,
}
# Every cache the controller reads: JobCaches field -> (kind, label selector).
WATCHED: Final[dict[str, tuple[ResourceKind, str | None]]] = {
    "jobs": (kinds.RAY_JOB, None),
    "clusters": (kinds.RAY_CLUSTER, None),
    "services": (kinds.SERVICE, None),
    "submitters": (kinds.JOB, CREATED_BY_SELECTOR),
    "pods": (kinds.POD, POD_SELECTOR),
}
PERMISSIONS: Final[tuple[Permission, ...]] = (
    *(
        need(kind.group, kind.plural, ("list", "watch"), "informer cache")
        for kind, _ in WATCHED.values()
    ),
    need("ray.io", "rayjobs", ("patch", "delete"), "the finalizer; DeleteSelf"),
    need("ray.io", "rayjobs/status", ("update",), "status"),
    need("ray.io", "rayjobs/finalizers", ("update",), "owner references that block deletion"),
    *children.NEEDS,
    *dashboards.needs(CONTROLLER),
    *batchscheduler.needs(CONTROLLER),
)
"""Everything the controller uses: the permission table (render/operator_permissions.py)
is generated from it."""


def job_changed(event: EventType, obj: Object, old: Object | None) -> bool:
    """Spec (generation), labels, annotations, deletion, and the status too: KubeRay
    watches RayJobs without a predicate, so its own status write brings the next pass
    at once (a new state, or a deletion rule due at ttl 0, does not wait for the 3 s
    requeue)."""
    if metadata_changed(event, obj, old):
        return True
    return old is not None and obj.get("status") != old.get("status")


class RayJobController:
    """``Controller`` for ``ray.io/v1`` RayJobs."""

    name = NAME

    def __init__(
        self,
        context: ControllerContext,
        options: RayJobOptions | None = None,
        *,
        metrics_registry: CollectorRegistry | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.options = options or RayJobOptions.from_settings(
            context.settings, gates_of(context), context.configuration
        )
        # Only Volcano's gang is the RayJob's own (scheduler-plugins refuses RayJobs).
        self._pod_group_kind = (
            kinds.VOLCANO_POD_GROUP if self.options.render.batch_scheduler == VOLCANO else None
        )
        if self._pod_group_kind is not None:
            batchscheduler.require_served(context.client, VOLCANO, self._pod_group_kind)
        caches = JobCaches(
            # No projection asked for: pods share the RayCluster controller's informer,
            # built first, with its projection.
            **context.caches(WATCHED),
            pod_groups=(
                context.informers.get(self._pod_group_kind).cache
                if self._pod_group_kind is not None
                else None
            ),
        )
        self.metrics = JobMetrics(caches.jobs)
        if metrics_registry is not None:
            self.metrics.register(metrics_registry)
        self.own_writes = OwnWrites()
        """Our last write of each RayJob (finalizer, status), while the cache has not
        seen it: its own status write starts the next pass, but a child's event may
        come first."""
        self.tools = JobTools(
            client=context.client,
            caches=caches,
            events=context.events(EVENT_SOURCE),
            clock=context.clock,
            options=self.options,
            metrics=self.metrics,
            dashboards=Dashboards.from_context(context),
            rng=rng or random.Random(),
        )

    def watches(self) -> Sequence[Watch]:
        owner = kinds.RAY_JOB
        result = [own(owner, predicate=job_changed)]
        for field, (kind, selector) in WATCHED.items():
            if field in ("jobs", "pods"):
                continue
            result.append(owned(kind, owner, label_selector=selector))
        if self._pod_group_kind is not None:
            result.append(owned(self._pod_group_kind, owner))
        return result

    def close(self) -> None:
        self.tools.dashboards.close()

    def reconcile(self, key: ObjectKey) -> Result:
        raw = self.tools.caches.jobs.get(key.namespace, key.name)
        if raw is None:
            self.own_writes.forget(key)
            self.metrics.forget(key.namespace, key.name)
            return Result()
        raw = self.own_writes.fresh(key, raw)
        if managed_elsewhere(key, raw):
            return Result()
        if raw["metadata"].get("deletionTimestamp"):
            return self._finish_deletion(key, raw)
        try:
            job = RayJob.model_validate(raw)
        except pydantic.ValidationError as exc:
            self.tools.events.record(raw, "Warning", JobReason.INVALID_SPEC.value,
                                     f"The RayJob cannot be read: {describe_parse_error(exc)}",
                                     Action.VALIDATE.value)  # fmt: skip
            return Result()
        run = JobRun.start(self.tools, key, raw, job)
        if not self._valid(run):
            self._write_status(run)
            return Result()
        state = run.state
        if state == "ValidationFailed":
            # Ours: KubeRay leaves a fixed RayJob in ValidationFailed for good.
            for field in ("jobDeploymentStatus", "reason", "message"):
                run.set(field, None)
            state = ""
        if state == "" and FINALIZER not in finalizers.finalizers(raw):
            run.raw = finalizers.set_finalizer(
                self.tools.client, kinds.RAY_JOB, raw, FINALIZER, present=True
            )
            self.own_writes.wrote(key, raw, run.raw)
        handler = STATES.get(state) if state is not None else None
        if handler is None:
            log.info("%s: unknown jobDeploymentStatus %r", key, run.get("jobDeploymentStatus"))
            return Result(requeue_after=self.options.requeue_seconds)
        result, written = self._step(run, handler)
        if state == "" and run.state == "Initializing" and written is not None:
            # The new RayJob's cluster name and job id are stored now, so a retry cannot
            # pick others: go on to create the cluster in this pass. KubeRay's next pass
            # does it, from the back of the queue: in a burst of 100 RayJobs no cluster
            # was created before every RayJob had its first pass (benchmarks/README.md).
            result, _ = self._step(JobRun.start(self.tools, key, written, job), on_initializing)
        return result

    def _step(self, run: JobRun, handler: Handler) -> tuple[Result, Object | None]:
        """One state's step, then the status written if it changed: the pass's result,
        and the RayJob as written (None when nothing was)."""
        outcome = handler(run)
        if outcome is not None:
            return outcome, None
        _count_attempt(run)
        written = self._write_status(run)
        return Result(requeue_after=self.options.requeue_seconds), written

    def _valid(self, run: JobRun) -> bool:
        try:
            validate_rayjob(run.job, self.options.gates)
        except InvalidObjectError as exc:
            run.event("Warning", _INVALID[exc.event_reason], f"{run.namespace}/{run.name}: {exc}",
                      Action.VALIDATE)  # fmt: skip
            run.fail("ValidationFailed", str(exc), deployment="ValidationFailed")
            return False
        return True

    def _finish_deletion(self, key: ObjectKey, raw: Object) -> Result:
        """Stop a Ray job that may still run (best effort), then let the RayJob go."""
        if FINALIZER not in finalizers.finalizers(raw):
            return Result()
        status = raw.get("status") or {}
        job_id, url = status.get("jobId"), status.get("dashboardURL")
        if status.get("jobStatus") not in TERMINAL_JOB_STATUSES and job_id and url:
            cluster = self.tools.caches.clusters.get(
                key.namespace, str(status.get("rayClusterName"))
            )
            try:
                client = self.tools.dashboards.for_cluster(cluster or _named(key, status), url)
                client.stop_job(str(job_id))
            except (TransportError, ServerError, NotLeading):
                raise  # the API server itself is unwell: the finalizer patch would fail too
            except Exception as exc:  # best effort: no Secret, head or spec keeps it alive
                log.info("%s: stopping Ray job %s on deletion: %s", key, job_id, exc)
                self.tools.events.record(raw, "Warning", JobReason.FAILED_TO_STOP_JOB.value,
                                         f"Ray job {job_id} could not be stopped on deletion "
                                         f"({type(exc).__name__}); it may still run",
                                         Action.DELETE.value)  # fmt: skip
        finalizers.set_finalizer(self.tools.client, kinds.RAY_JOB, raw, FINALIZER, present=False)
        return Result()

    def _write_status(self, run: JobRun) -> Object | None:
        """KubeRay's rule: write when jobStatus, jobDeploymentStatus, the cluster's status
        or the check-failure timer changed; a terminal RayJob gets its endTime then.
        Returns the RayJob as written, or None when nothing was."""
        old: dict[str, Any] = run.raw.get("status") or {}
        new = run.status
        compared = ("jobStatus", "jobDeploymentStatus", "jobStatusCheckFailureStartTime")
        changed = any(old.get(k) != new.get(k) for k in compared) or status_changed(
            old.get("rayClusterStatus") or {}, new.get("rayClusterStatus") or {}
        )
        if not changed:
            return None
        if new.get("jobDeploymentStatus") in TERMINAL_JOB_DEPLOYMENT_STATUSES:
            run.set_time("endTime", run.now())
        generation = run.raw["metadata"].get("generation")
        if generation is not None:
            new["observedGeneration"] = generation
        written = self.tools.client.update_status({**run.raw, "status": copy.deepcopy(new)})
        self.own_writes.wrote(run.key, run.raw, written)
        _observe_execution(run, old)
        return written


def _count_attempt(run: JobRun) -> None:
    """Attempt counters, and the retry rule: a Failed attempt with backoffLimit left
    (not a deadline or a status-check timeout) retries on a new cluster."""
    state = run.state
    failed = int(run.get("failed") or 0) + (1 if state == "Failed" else 0)
    succeeded = int(run.get("succeeded") or 0)
    if run.get("jobStatus") == "SUCCEEDED" and state == "Complete":
        succeeded += 1
    run.status["failed"], run.status["succeeded"] = failed, succeeded
    limit = run.job.spec.backoff_limit
    if state != "Failed" or limit is None or failed >= limit + 1:
        return
    if run.get("reason") in _NOT_RETRIED:
        return
    run.set_state("Retrying")


def _observe_execution(run: JobRun, old: dict[str, Any]) -> None:
    new_state = run.state
    if old.get("jobDeploymentStatus") in TERMINAL_JOB_DEPLOYMENT_STATUSES:
        return
    if new_state not in TERMINAL_JOB_DEPLOYMENT_STATUSES and new_state != "Retrying":
        return
    start = run.time("startTime")
    if start is None:
        return
    seconds = (run.now() - start).total_seconds()
    retries = int(old.get("failed") or 0)
    run.tools.metrics.observe_execution(
        run.namespace, run.name, run.uid, str(new_state), retries, seconds
    )


def _named(key: ObjectKey, status: dict[str, Any]) -> Object:
    """A stand-in for a cluster the cache no longer has: only its name is needed."""
    return {"metadata": {"name": status.get("rayClusterName"), "namespace": key.namespace}}
