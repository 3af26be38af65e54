"""What the RayJob controller does with a change to a RayJob.

A RayJob is one run: the controller makes its cluster (``build_rayjob_cluster``) and,
in K8sJobMode, a submitter Job (``build_submitter_job``) from the spec as it stands when
the run starts, and never changes them after (the cluster is got-or-created by name).
So:

- a new RayJob, or the components' replacement of one (its name carries a digest of
  the spec, so a spec change is a new object, created before the old one is deleted),
  is a new run on a new cluster;
- an edit of a RayJob in place reaches no running cluster and no finished job; only
  what the controller reads later takes effect (``suspend``, deadlines, ``backoffLimit``,
  what happens when the job ends), and a retry or a resume runs with the new spec;
- ``suspend`` deletes the cluster and the submitter (from Initializing or Running); a
  resume starts a new run;
- a failed run is retried ``backoffLimit`` times, each on a new cluster (the old one is
  deleted first), except after a deadline;
- deleting the RayJob stops its Ray job and deletes its cluster and submitter Job
  (owner references).

The run before the change is taken to be in progress, holding its cluster (an upper
bound: a finished job with ``shutdownAfterJobFinishes`` holds none).
"""

from __future__ import annotations

import dataclasses
from typing import Final

from operator_runtime.api import RayCluster, RayJob
from operator_runtime.render import (
    RenderError,
    SubmitterParams,
    build_rayjob_cluster,
    build_submitter_job,
)
from operator_runtime.render.resources import pod_resources, summary_amounts

from .changes import ObjectChange
from .ledger import cluster_pods, cluster_resources
from .model import Finding, Resources, Verdict, add_resources, peak_resources
from .raycluster import cluster_deleted
from .rules import ReviewSettings
from .verdicts import base, judge, ledger, spec_uncertain

__all__ = ["JobRun", "job_run", "rayjob_verdict"]

SUFFIX: Final = "xxxxx"
"""Stands in for the five random characters of a RayJob's cluster name."""
READ_LATER: Final = (
    "spec.suspend",
    "spec.activeDeadlineSeconds",
    "spec.preRunningDeadlineSeconds",
    "spec.backoffLimit",
    "spec.shutdownAfterJobFinishes",
    "spec.ttlSecondsAfterFinished",
    "spec.deletionStrategy",
)
"""What the controller reads during and after a run, so an edit reaches the current one."""


@dataclasses.dataclass(frozen=True)
class JobRun:
    """What one run of a RayJob holds while it runs."""

    cluster: RayCluster | None
    """Its own cluster (None on a ``clusterSelector``'s cluster)."""
    pods: int
    resources: Resources

    def describe(self, job: RayJob) -> str:
        submitter = " and a submitter pod" if _has_submitter_pod(job) else ""
        if self.cluster is None:
            return f"on the existing cluster its clusterSelector names{submitter}"
        return f"on a new cluster of {self.pods - int(bool(submitter))} pod(s){submitter}"


def _has_submitter_pod(job: RayJob) -> bool:
    return job.spec.submission_mode == "K8sJobMode"


def job_run(job: RayJob, settings: ReviewSettings, name: str | None = None) -> JobRun:
    """The cluster and submitter the controller makes for one run of ``job``."""
    cluster = None
    pods, parts = 0, []
    if job.spec.ray_cluster_spec is not None and not job.spec.cluster_selector:
        document = build_rayjob_cluster(
            job=job,
            cluster_name=f"{name or job.metadata.name}-{SUFFIX}",
            job_id="",
            options=settings.options,
        )
        cluster = RayCluster.model_validate(document)
        pods += sum(cluster_pods(cluster).values())
        parts.append(cluster_resources(cluster))
    if _has_submitter_pod(job):
        pods += 1
        try:
            submitter = build_submitter_job(
                params=SubmitterParams(
                    job=job, job_id="", dashboard_url="", options=settings.options, cluster=cluster
                )
            )
        except RenderError:
            # A clusterSelector's cluster is not in the change: the default submitter
            # takes its image from that head, so its requests are left uncounted.
            submitter = {}
        spec = submitter.get("spec")
        template = spec.get("template") if isinstance(spec, dict) else None
        parts.append(summary_amounts(pod_resources(template if isinstance(template, dict) else {})))
    return JobRun(cluster, pods, add_resources(*parts))


def rayjob_verdict(change: ObjectChange, settings: ReviewSettings) -> Verdict:
    return judge(
        change,
        settings,
        RayJob,
        created=_created,
        deleted=_deleted,
        replaced=_replaced,
        updated=_updated,
        cluster_after=lambda new, s: None if new.spec.suspend else job_run(new, s).cluster,
        cluster_spec=("spec", "rayClusterSpec"),
    )


def _lifecycle(job: RayJob) -> list[str]:
    """What the run does after it starts: retries, and what happens to its cluster."""
    effects = []
    limit = job.spec.backoff_limit or 0
    if limit:
        effects.append(
            f"a failed run is retried up to {limit} time(s) (backoffLimit), each on a new "
            "cluster made after the old one is deleted; not after a deadline"
        )
    if job.spec.cluster_selector:
        return effects
    if job.spec.deletion_strategy is not None:
        effects.append("when the job ends, its deletionStrategy rules decide what is deleted")
    elif job.spec.shutdown_after_job_finishes:
        effects.append(
            f"its cluster is deleted {job.spec.ttl_seconds_after_finished} s after the job "
            "ends (shutdownAfterJobFinishes)"
        )
    else:
        effects.append(
            "its cluster keeps running after the job ends, until the RayJob is deleted "
            "(no shutdownAfterJobFinishes)"
        )
    return effects


def _created(change: ObjectChange, new: RayJob, settings: ReviewSettings) -> Verdict:
    if new.spec.suspend:
        return base(change, summary="created suspended: nothing runs until suspend is false")
    run = job_run(new, settings)
    return base(
        change,
        summary=f"a new run {run.describe(new)}",
        effects=tuple(_lifecycle(new)),
        **ledger(pods_after=run.pods, created=run.pods, after=run.resources),
    )


def _deleted(change: ObjectChange, old: RayJob, settings: ReviewSettings) -> Verdict:
    stop = "its Ray job is stopped if it still runs"
    if old.spec.suspend:
        return base(change, summary="deleted: suspended, it holds no cluster")
    run = job_run(old, settings)
    if run.cluster is None:
        return base(
            change,
            summary="deleted: the selected cluster is left running",
            effects=(f"{stop}; the cluster its clusterSelector names is not deleted",),
            **ledger(pods_before=run.pods, deleted=run.pods, before=run.resources),
        )
    verdict = cluster_deleted(change, run.cluster, settings)
    effect = f"{stop}; its cluster and submitter Job are deleted with it (owner references)"
    return dataclasses.replace(
        verdict,
        summary=f"deleted: {run.pods} pod(s) go",
        effects=(effect, *verdict.effects),
        **ledger(pods_before=run.pods, deleted=run.pods, before=run.resources),
    )


def _replaced(change: ObjectChange, old: RayJob, new: RayJob, settings: ReviewSettings) -> Verdict:
    old_run = job_run(old, settings) if not old.spec.suspend else JobRun(None, 0, {})
    new_run = job_run(new, settings) if not new.spec.suspend else JobRun(None, 0, {})
    side_by_side = change.create_before_delete
    reasons = ", ".join(change.replace_reasons) or "its name, which carries a digest of the spec"
    effects = [
        f"Pulumi replaces the RayJob ({reasons}): a new run {new_run.describe(new)}",
        "the old RayJob is deleted after the new one is created (with wait_for_ready, once "
        "the new run is Complete): its run, if still going, stops and its cluster goes"
        if side_by_side
        else "the old RayJob, its run and its cluster are deleted first",
        *_lifecycle(new),
    ]
    finding = settings.finding(
        "job-runs-again", change.ref, f"the job runs again {new_run.describe(new)}"
    )
    return base(
        change,
        summary=f"a new run {new_run.describe(new)}; the old run's RayJob is deleted",
        effects=tuple(effects),
        pods_before=old_run.pods,
        pods_after=new_run.pods,
        pods_created=new_run.pods,
        pods_deleted=old_run.pods,
        peak_pods=old_run.pods + new_run.pods if side_by_side else max(old_run.pods, new_run.pods),
        before=old_run.resources,
        after=new_run.resources,
        peak=add_resources(old_run.resources, new_run.resources)
        if side_by_side
        else peak_resources(old_run.resources, new_run.resources),
        findings=(finding,),
    )


def _updated(change: ObjectChange, old: RayJob, new: RayJob, settings: ReviewSettings) -> Verdict:
    old_run = job_run(old, settings) if not old.spec.suspend else JobRun(None, 0, {})
    new_run = job_run(new, settings) if not new.spec.suspend else JobRun(None, 0, {})
    effects: list[str] = []
    findings: list[Finding] = []
    before = after = old_run
    created = deleted = 0
    if new.spec.suspend and not old.spec.suspend:
        after, deleted = JobRun(None, 0, {}), old_run.pods
        summary = f"suspended: its cluster and submitter are deleted, {deleted} pod(s) go"
        effects.append(
            "suspend (from Initializing or Running): the cluster and the submitter Job are "
            "deleted; a finished job is left as it is"
        )
        findings.append(
            settings.finding(
                "suspend-deletes-pods", change.ref, f"suspend deletes {deleted} pod(s)"
            )
        )
    elif old.spec.suspend and not new.spec.suspend:
        after, created = new_run, new_run.pods
        summary = f"resumed: a new run {new_run.describe(new)}"
        effects.append("resumed: the run starts over from New, with the spec as it is now")
    else:
        summary = "no run changes"
    ignored = [p for p in change.changed if p.startswith("spec.") and not p.startswith(READ_LATER)]
    if ignored and not old.spec.suspend and not new.spec.suspend:
        summary = "not applied to the running job: it keeps the spec it started with"
        effects.append(
            "a RayJob's cluster and submission are made once, when its run starts: the "
            "running job and its cluster ignore " + ", ".join(ignored) + "; a finished job "
            "does not run again (a retry or a resume uses the new spec)"
        )
        findings.append(
            settings.finding(
                "change-not-applied",
                change.ref,
                "ignored by the running job: " + ", ".join(ignored),
            )
        )
    later = [p for p in change.changed if p.startswith(READ_LATER[1:])]
    if later:
        effects.append("read by the controller as the run goes on: " + ", ".join(later))
    uncertain = spec_uncertain(change)
    if uncertain:
        effects.append("known at deploy (or a secret that changed): " + ", ".join(uncertain))
        findings.append(settings.finding("known-at-deploy", change.ref, ", ".join(uncertain)))
    return base(
        change,
        summary=summary,
        effects=tuple(effects + _lifecycle(new)),
        findings=tuple(findings),
        known_at_deploy=bool(uncertain),
        **ledger(
            pods_before=before.pods,
            pods_after=after.pods,
            created=created,
            deleted=deleted,
            before=before.resources,
            after=after.resources,
        ),
    )
