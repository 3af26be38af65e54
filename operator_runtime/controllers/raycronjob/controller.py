"""The RayCronJob controller: KubeRay's ``raycronjob_controller.go`` (gate ``RayCronJob``).

One pass over a RayCronJob (``reconcile``):

1. unreadable or invalid: a Warning ``InvalidRayCronJobSpec`` event; nothing else until
   the object changes;
2. suspended: a Normal ``SuspendedRayCronJob`` event; RayJobs already made are left
   alone;
3. the tick due now (``schedule.plan``, from ``status.lastScheduleTime`` or else the
   creation time, on the injected clock): none yet → look again when the next is due;
4. create the RayJob ``<cron>-<unix minutes of the tick>`` from ``spec.jobTemplate``,
   owned by the RayCronJob; AlreadyExists means this tick already ran (a pass whose
   status write failed), so a tick never runs twice;
5. ``status.lastScheduleTime`` = the tick (the scheduled time, not now);
6. ours: ticks missed before it (a gap, e.g. the operator was down) are not run; one
   Warning ``MissedSchedules`` event counts them (KubeRay runs each of them).

Errors (a failed create or status write) are retried with backoff.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

import pydantic

from operator_runtime.api import InvalidObjectError, RayCronJob, validate_raycronjob
from operator_runtime.api.features import FeatureGates
from operator_runtime.api.reasons import Action
from operator_runtime.controllers.ownwrites import OwnWrites
from operator_runtime.controllers.parse_errors import describe_parse_error
from operator_runtime.controllers.permissions import declarer
from operator_runtime.controllers.raycronjob import schedule as sched
from operator_runtime.controllers.rendering import gates_of
from operator_runtime.render import Permission, build_cron_rayjob
from operator_runtime.runtime import kinds
from operator_runtime.runtime.cache import Cache
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.clock import Clock
from operator_runtime.runtime.context import ControllerContext
from operator_runtime.runtime.errors import AlreadyExists
from operator_runtime.runtime.events import EventRecorder
from operator_runtime.runtime.kinds import Object, ResourceKind
from operator_runtime.runtime.reconcile import ObjectKey, Result, Watch, own

log = logging.getLogger(__name__)
NAME: Final = "raycronjob"
"""The controller's name, also in the permission table (render/operator_permissions.py)."""
EVENT_SOURCE: Final = "raycronjob-controller"
GATE: Final = "RayCronJob"


class CronReason(StrEnum):
    """Event reasons: KubeRay's two, and ours for skipped ticks."""

    INVALID_SPEC = "InvalidRayCronJobSpec"
    SUSPENDED = "SuspendedRayCronJob"
    MISSED_SCHEDULES = "MissedSchedules"


# Every cache the controller reads: CronCaches field -> (kind, label selector).
WATCHED: Final[dict[str, tuple[ResourceKind, str | None]]] = {
    "cronjobs": (kinds.RAY_CRON_JOB, None),
}


need: Final = declarer(NAME, only_with=GATE)


PERMISSIONS: Final[tuple[Permission, ...]] = (
    *(
        need(kind.group, kind.plural, ("list", "watch"), "informer cache")
        for kind, _ in WATCHED.values()
    ),
    need("ray.io", "raycronjobs/status", ("update",), "lastScheduleTime"),
    need(
        "ray.io",
        "raycronjobs/finalizers",
        ("update",),
        "owner references that block deletion (the RayJobs it creates)",
    ),
    need("ray.io", "rayjobs", ("create",), "one RayJob per tick"),
)
"""Everything the controller uses: the permission table (render/operator_permissions.py)
is generated from it."""


def enabled(gates: FeatureGates) -> bool:
    """KubeRay starts the controller only with the ``RayCronJob`` gate on."""
    return gates.enabled(GATE)


@dataclass(frozen=True, slots=True)
class CronCaches:
    cronjobs: Cache


class RayCronJobController:
    """``Controller`` for ``ray.io/v1`` RayCronJobs."""

    name = NAME

    def __init__(self, context: ControllerContext, *, zone: datetime.tzinfo | None = None) -> None:
        self.caches = CronCaches(**context.caches(WATCHED))
        self.client: KubeClient = context.client
        self.clock: Clock = context.clock
        self.events: EventRecorder = context.events(EVENT_SOURCE)
        self.gates = gates_of(context)
        tz = context.settings.tz
        self.zone = zone or sched.local_zone({} if tz is None else {"TZ": tz})
        """The zone of a schedule without ``spec.timeZone`` (Go's ``time.Local``)."""
        self.own_writes = OwnWrites()
        """Our last status write of each RayCronJob, while the cache has not shown it:
        a pass before then (a retry, an event) would create the tick's RayJob again
        (AlreadyExists) and write the status on the old resourceVersion (409)."""

    def watches(self) -> Sequence[Watch]:
        # No predicate, as KubeRay: its own status write brings one more (idle) pass.
        return [own(kinds.RAY_CRON_JOB)]

    def reconcile(self, key: ObjectKey) -> Result:
        raw = self.caches.cronjobs.get(key.namespace, key.name)
        if raw is None:
            self.own_writes.forget(key)
            return Result()
        raw = self.own_writes.fresh(key, raw)
        if raw["metadata"].get("deletionTimestamp"):
            return Result()
        cron = self._valid(key, raw)
        if cron is None:
            return Result()
        if cron.spec.suspend:
            self.events.record(raw, "Normal", CronReason.SUSPENDED.value,
                               "RayCronJob suspended, no new RayJobs will be created",
                               Action.SUSPEND.value)  # fmt: skip
            return Result()
        zone = sched.zone_of(cron.spec.time_zone, self.zone)
        schedule = sched.parse_schedule(cron.spec.schedule, zone)
        now = self.clock.now()
        status = raw.get("status") or {}
        last = status.get("lastScheduleTime") or raw["metadata"]["creationTimestamp"]
        plan = sched.plan(schedule, sched.parse_time(str(last)), now)
        if plan.run is None:
            return Result(requeue_after=_seconds(plan.next - now))
        self._create_job(raw, plan.run)
        stamp = sched.format_tick(plan.run)
        if status.get("lastScheduleTime") != stamp:
            status = {**status, "lastScheduleTime": stamp}
            written = self.client.update_status({**raw, "status": status})
            self.own_writes.wrote(key, raw, written)
        if plan.skipped:
            # After the status write: a pass that fails before it is repeated whole,
            # and must not report the same gap twice.
            self.events.record(raw, "Warning", CronReason.MISSED_SCHEDULES.value,
                               _missed_note(plan), Action.CREATE.value)  # fmt: skip
        log.info("%s: scheduled %s; next at %s", key, stamp, sched.format_tick(plan.next))
        return Result(requeue_after=_seconds(plan.next - now))

    def _valid(self, key: ObjectKey, raw: Object) -> RayCronJob | None:
        try:
            cron = RayCronJob.model_validate(raw)
            validate_raycronjob(cron, self.gates)
        except pydantic.ValidationError as exc:
            note = f"{key}: the RayCronJob cannot be read: {describe_parse_error(exc)}"
        except InvalidObjectError as exc:
            note = f"{key}: {exc}"
        else:
            return cron
        self.events.record(raw, "Warning", CronReason.INVALID_SPEC.value, note,
                           Action.VALIDATE.value)  # fmt: skip
        return None

    def _create_job(self, raw: Object, tick: datetime.datetime) -> None:
        job = build_rayjob(raw, tick)
        try:
            self.client.create(job)
        except AlreadyExists:
            # The deterministic name: this tick's RayJob exists, an earlier pass made it.
            log.info("RayJob %s for this tick already exists", job["metadata"]["name"])


def build_rayjob(cron: Object, tick: datetime.datetime) -> Object:
    """The RayJob for ``tick``: the template's spec as stored, labelled, owned (built by
    ``render``, which shows the same RayJob for ``render FILE``)."""
    return build_cron_rayjob(cron=cron, tick=tick)


def _missed_note(plan: sched.Plan) -> str:
    assert plan.run is not None and plan.first_skipped is not None
    count = f"more than {plan.skipped}" if plan.more_skipped else str(plan.skipped)
    last = plan.last_skipped or plan.first_skipped
    return (
        f"missed {count} scheduled time(s) from {sched.format_tick(plan.first_skipped)} "
        f"to {sched.format_tick(last)}; they were skipped and only the latest, "
        f"{sched.format_tick(plan.run)}, was run"
    )


def _seconds(delta: datetime.timedelta) -> float:
    return max(delta.total_seconds(), 0.0)
