"""The RayJob a RayCronJob creates next: what ``render`` prints for a RayCronJob.

The RayCronJob controller creates, on each tick, a RayJob named ``<cron>-<unix minutes of
the tick>`` whose spec is the cron's ``jobTemplate`` as stored, labelled with the cron's
name, annotated with the tick, and owned by the cron. The tick comes from the same pure
schedule functions the controller uses (``render.schedule``); the caller passes the
current time and the operator's local zone in, since render reads no clock and no
environment.
"""

from __future__ import annotations

import copy
import datetime
from dataclasses import dataclass

from operator_runtime.api import API_VERSION, JSONObject, RayCronJob
from operator_runtime.api.annotations import AnnotationKey
from operator_runtime.api.labels import LabelKey
from operator_runtime.render import schedule as sched

__all__ = ["CronRenderParams", "build_cron_rayjob", "next_tick", "render_raycronjob"]


@dataclass(frozen=True, slots=True)
class CronRenderParams:
    cron: RayCronJob
    document: JSONObject
    """The cron as written: its ``jobTemplate`` is copied as it is, like the stored one."""
    now: datetime.datetime
    local_zone: datetime.tzinfo = datetime.UTC
    """The operator's zone, for a schedule without ``spec.timeZone`` (UTC in its image)."""


def next_tick(*, params: CronRenderParams) -> datetime.datetime:
    """The tick of the next RayJob: the one due now if any (after a gap, the latest),
    else the first after the last schedule (or the creation time; ``now`` for an object
    not created yet)."""
    cron = params.cron
    zone = sched.zone_of(cron.spec.time_zone, params.local_zone)
    schedule = sched.parse_schedule(cron.spec.schedule, zone)
    status = cron.status
    last = (status.last_schedule_time if status else None) or cron.metadata.creation_timestamp
    plan = sched.plan(schedule, last or params.now, params.now)
    return plan.run if plan.run is not None else plan.next


def build_cron_rayjob(*, cron: JSONObject, tick: datetime.datetime) -> JSONObject:
    """The RayJob of ``cron`` (a RayCronJob as stored, or as written) for ``tick``: the
    template's spec copied as it is, labelled, annotated with the tick, and owned by the
    cron once it has a uid. The controller creates exactly this."""
    metadata = cron.get("metadata")
    meta = metadata if isinstance(metadata, dict) else {}
    spec = cron.get("spec")
    template = spec.get("jobTemplate") if isinstance(spec, dict) else None
    name = str(meta.get("name") or "")
    job_metadata: JSONObject = {
        "name": sched.job_name(name, tick),
        "namespace": str(meta.get("namespace") or "default"),
        "labels": {LabelKey.CRONJOB_NAME.value: name},
        "annotations": {AnnotationKey.CRONJOB_SCHEDULED_TIMESTAMP.value: sched.format_tick(tick)},
    }
    if meta.get("uid"):
        job_metadata["ownerReferences"] = [
            {
                "apiVersion": cron.get("apiVersion", API_VERSION),
                "kind": "RayCronJob",
                "name": name,
                "uid": meta["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    return {
        "apiVersion": API_VERSION,
        "kind": "RayJob",
        "metadata": job_metadata,
        "spec": copy.deepcopy(template) if isinstance(template, dict) else {},
    }


def render_raycronjob(*, params: CronRenderParams) -> tuple[JSONObject, ...]:
    """The RayJob the controller would create next for ``params.cron``."""
    return (build_cron_rayjob(cron=params.document, tick=next_tick(params=params)),)
