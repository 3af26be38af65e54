"""What the RayCronJob controller does with a change to a RayCronJob.

A RayCronJob holds no pods itself: on each tick of its schedule the controller creates
a RayJob from ``jobTemplate`` (``build_cron_rayjob``), and that RayJob runs once on its
own cluster (counted here as the RayJob verdict counts a run, ``rayjob.job_run``). So:

- a template change reaches only the RayJobs created from now on; those already made
  (running or finished) keep their spec;
- ``suspend`` stops new RayJobs and leaves the made ones alone;
- un-suspending runs, at once, only the latest tick missed meanwhile (the others are
  counted in a ``MissedSchedules`` event, as Kubernetes' CronJob does; KubeRay v1.7.0
  creates one RayJob per missed tick), then follows the schedule;
- no concurrency policy: a run longer than the schedule's period overlaps the next;
- deleting it deletes every RayJob it made (owner references), and their clusters;
- nothing of this happens unless the operator runs with the RayCronJob gate.

The ledger counts no run as running before or after (they come on the schedule's
time, not the change's); a resume counts the one run it may start at once.
"""

from __future__ import annotations

import datetime
from typing import Final

from operator_runtime.api import InvalidObjectError, JSONObject, RayCronJob, RayJob
from operator_runtime.render import build_cron_rayjob

from .changes import ObjectChange
from .model import Finding, Resources, Verdict
from .rayjob import JobRun, job_run
from .rules import ReviewSettings
from .verdicts import base, invalid, ledger, load

__all__ = ["raycronjob_verdict"]

_STAND_IN_TICK: Final = datetime.datetime(2000, 1, 1, tzinfo=datetime.UTC)
"""Names the stand-in RayJob of a run; which tick does not change what a run holds."""
_TEMPLATE: Final = "spec.jobTemplate"
_SCHEDULE: Final = ("spec.schedule", "spec.timeZone")


def cron_run(document: JSONObject, settings: ReviewSettings) -> tuple[RayJob, JobRun]:
    """The RayJob the controller creates on a tick, and what its run holds."""
    job = RayJob.model_validate(build_cron_rayjob(cron=document, tick=_STAND_IN_TICK))
    return job, job_run(job, settings)


def raycronjob_verdict(change: ObjectChange, settings: ReviewSettings) -> Verdict:
    try:
        old = load(change.before, settings, RayCronJob)
        new = load(change.after, settings, RayCronJob)
    except InvalidObjectError as error:
        return invalid(change, settings, str(error))
    if new is None:
        return base(
            change,
            summary="deleted: every RayJob it made is deleted, with their clusters",
            effects=(
                "its RayJobs (owner references) go with it: a run still going stops and its "
                "cluster is deleted; finished runs' records go too",
            ),
        )
    assert change.after is not None
    job, run = cron_run(dict(change.after), settings)
    each = f"each run {run.describe(job)}"
    findings: list[Finding] = []
    if not settings.options.feature_gates.ray_cron_job:
        findings.append(
            settings.finding(
                "raycronjob-gate-off",
                change.ref,
                "the operator runs without the RayCronJob gate: no RayJob is ever created",
            )
        )
    effects = [
        "no concurrency policy: a run that lasts longer than the schedule's period runs "
        "beside the next, each on its own cluster"
    ]
    if old is None:
        summary = (
            "created suspended: no RayJob until resumed"
            if new.spec.suspend
            else f"created: a RayJob on each tick from the first after now, {each}"
        )
        return base(change, summary=summary, effects=tuple(effects), findings=tuple(findings))
    created = 0
    peak: Resources = {}
    if new.spec.suspend and not old.spec.suspend:
        summary = "suspended: no new RayJob; those already made go on"
    elif old.spec.suspend and not new.spec.suspend:
        summary = f"resumed: at most one RayJob at once (the latest tick missed), {each}"
        effects.insert(
            0,
            "resumed: if ticks passed while it was suspended, only the latest runs now and "
            "a MissedSchedules event counts the others (KubeRay v1.7.0 runs every missed "
            "tick at once, one cluster each); then the schedule goes on",
        )
        created, peak = run.pods, run.resources
    elif any(p.startswith(_TEMPLATE) for p in change.changed):
        summary = "template changed: only RayJobs created from now on get it"
    else:
        summary = "no run changes"
    if any(p.startswith(_TEMPLATE) for p in change.changed):
        effects.insert(
            0,
            "jobTemplate: only the RayJobs created from now on get the change; those already "
            "made, running or finished, keep theirs",
        )
    if any(p.startswith(_SCHEDULE) for p in change.changed):
        effects.insert(0, "the next tick comes from the new schedule, after the last one run")
    return base(
        change,
        summary=summary,
        effects=tuple(effects),
        findings=tuple(findings),
        **ledger(pods_after=created, created=created, after=peak),
    )
