"""One handler per ``jobDeploymentStatus`` (KubeRay's switch in ``rayjob_controller.go``).

A handler changes ``run.status`` and returns None, so the controller writes the status
("break" in KubeRay), or returns a ``Result`` to end the pass with no status write
("return" in KubeRay). Errors raise and are retried with backoff.
"""

from __future__ import annotations

import datetime
import json
import logging
from collections.abc import Callable
from typing import Any, Final

from operator_runtime.api.raycluster import STATE_READY
from operator_runtime.api.rayjob import (
    TERMINAL_JOB_STATUSES,
    JobDeploymentStatus,
    JobFailedReason,
)
from operator_runtime.api.reasons import Action, JobReason
from operator_runtime.api.useryaml import load_yaml
from operator_runtime.clients import (
    DashboardClient,
    DashboardError,
    DashboardNotFound,
    DuplicateSubmission,
    JobInfo,
    JobSubmission,
)
from operator_runtime.controllers import batchscheduler
from operator_runtime.controllers.rayjob import children, finished
from operator_runtime.controllers.rayjob.options import SUBMITTER_FINISHED_TIMEOUT
from operator_runtime.controllers.rayjob.run import JobRun, epoch_ms
from operator_runtime.render.jobs import SIDECAR_RESTART_GATE, SUBMITTER_BACKOFF_LIMIT
from operator_runtime.runtime.clock import later, parse_time
from operator_runtime.runtime.errors import ApiError
from operator_runtime.runtime.kinds import Object
from operator_runtime.runtime.reconcile import Result

log = logging.getLogger(__name__)
SUBMITTER_CONTAINER: Final = "ray-job-submitter"
NOT_FOUND_AFTER_SUBMITTER: Final = "Submitter completed but Ray job not found in RayCluster."

Handler = Callable[[JobRun], Result | None]
_SUSPENDABLE: Final[tuple[JobDeploymentStatus, ...]] = ("Running", "Initializing")


def _again(run: JobRun) -> Result:
    return Result(requeue_after=run.tools.options.requeue_seconds)


# -- checks shared by several states: each sets the status and returns True when it hit


def suspend_requested(run: JobRun) -> bool:
    if not run.job.spec.suspend:
        return False
    if run.state not in _SUSPENDABLE:
        return False
    run.set_state("Suspending")
    return True


def _deadline_passed(run: JobRun, seconds: int | None) -> bool:
    start = run.time("startTime")
    return seconds is not None and start is not None and run.now() >= later(start, seconds)


def active_deadline_passed(run: JobRun) -> bool:
    seconds = run.job.spec.active_deadline_seconds
    if not _deadline_passed(run, seconds):
        return False
    run.fail("DeadlineExceeded", f"The RayJob has passed the activeDeadlineSeconds. StartTime: "
             f"{run.get('startTime')}. ActiveDeadlineSeconds: {seconds}")  # fmt: skip
    return True


def pre_running_deadline_passed(run: JobRun) -> bool:
    seconds = run.job.spec.pre_running_deadline_seconds
    if not _deadline_passed(run, seconds):
        return False
    run.fail("PreRunningDeadlineExceeded", "The RayJob has passed the "
             f"preRunningDeadlineSeconds. StartTime: {run.get('startTime')}. "
             f"PreRunningDeadlineSeconds: {seconds}")  # fmt: skip
    return True


def grace_period_passed(run: JobRun) -> bool:
    """The Ray job ended long ago but the RayJob is still Running (e.g. the submitter
    never finished): end it anyway."""
    if run.get("jobStatus") not in TERMINAL_JOB_STATUSES:
        return False
    ended = parse_time((run.get("rayJobInfo") or {}).get("endTime"))
    grace = run.tools.options.transition_grace_seconds
    if ended is None or run.now() < later(ended, grace):
        return False
    state: JobDeploymentStatus = "Failed" if run.get("jobStatus") == "FAILED" else "Complete"
    run.fail("JobDeploymentStatusTransitionGracePeriodExceeded", "JobDeploymentStatus does "
             "not transition to Complete or Failed within the grace period after JobStatus "
             "reaches a terminal state.", deployment=state)  # fmt: skip
    return True


def status_check_timed_out(run: JobRun) -> bool:
    since = run.time("jobStatusCheckFailureStartTime")
    timeout = run.tools.options.status_check_timeout_seconds
    if since is None or run.now() < later(since, timeout):
        return False
    run.fail("JobStatusCheckTimeoutExceeded", f"Job status checks have been failing since "
             f"{_go_datetime(since)}; exceeded timeout of {int(timeout)}s")  # fmt: skip
    return True


def record_check_failure(run: JobRun) -> bool:
    """Start the status-check failure timer; True if it was not running yet."""
    if run.get("jobStatusCheckFailureStartTime"):
        return False
    run.set_time("jobStatusCheckFailureStartTime", run.now())
    return True


def clear_check_failure(run: JobRun) -> bool:
    if not run.get("jobStatusCheckFailureStartTime"):
        return False
    run.set("jobStatusCheckFailureStartTime", None)
    return True


# -- the states


def on_new(run: JobRun) -> Result | None:
    tools, spec = run.tools, run.job.spec
    if run.mode != "InteractiveMode" and not run.get("jobId"):
        run.set("jobId", spec.job_id or tools.suffixed(run.name))
    if not run.get("rayClusterName"):
        selected = (spec.cluster_selector or {}).get(children.CLUSTER_SELECTOR_KEY)
        run.set("rayClusterName", selected or tools.suffixed(run.name))
    run.set("jobStatus", None)
    run.set_state("Initializing")
    run.set_time("startTime", run.now())
    return None


def on_initializing(run: JobRun) -> Result | None:
    if suspend_requested(run) or active_deadline_passed(run) or pre_running_deadline_passed(run):
        return None
    scheduler = run.tools.options.render.batch_scheduler
    if scheduler:  # the gang (Volcano's PodGroup of cluster and submitter) comes first
        batchscheduler.on_submission(
            run.tools.client, run.tools.caches.pod_groups, scheduler, run.job
        )
    cluster = children.get_or_create_cluster(run)
    if not run.get("dashboardURL"):
        cluster_status = cluster.get("status") or {}
        if cluster_status.get("state") != STATE_READY:
            run.set("rayClusterStatus", cluster_status)
            return None
        run.set("dashboardURL", children.dashboard_url(run, cluster))
    if run.mode == "InteractiveMode":
        run.set_state("Waiting")
        return None
    if run.mode == "K8sJobMode":
        children.create_submitter_if_needed(run, cluster)
    run.set_state("Running")
    return None


def on_waiting(run: JobRun) -> Result | None:
    if pre_running_deadline_passed(run):
        return None
    if not run.job.spec.job_id:
        return _again(run)
    run.set("jobId", run.job.spec.job_id)
    run.set_state("Running")
    return None


def on_running(run: JobRun) -> Result | None:
    if (
        suspend_requested(run)
        or active_deadline_passed(run)
        or grace_period_passed(run)
        or status_check_timed_out(run)
    ):
        return None
    cluster = children.get_or_create_cluster(run)
    children.reconcile_head_service(run, cluster)
    finished_at: datetime.datetime | None = None
    if run.has_submitter:
        failed, finished_at = _check_submitter(run, cluster)
        if _submitter_finished_long_ago(run, finished_at) or failed:
            return None
    dashboard = run.tools.dashboards.for_cluster(cluster, str(run.get("dashboardURL") or ""))
    job_id = str(run.get("jobId") or "")
    try:
        info = dashboard.job_info(job_id)
    except DashboardNotFound:
        if run.mode == "HTTPMode":
            return None if _submit(run, dashboard) else _again(run)
        if finished_at is not None:
            run.fail("AppFailed", NOT_FOUND_AFTER_SUBMITTER)
            return None
        return _again(run)
    except DashboardError as exc:
        log.info("%s: job info of %s: %s", run.key, job_id, exc)
        return None if record_check_failure(run) else _again(run)
    clear_check_failure(run)
    _copy_job_info(run, info, cluster, submitter_done=finished_at is not None)
    return None


def _copy_job_info(run: JobRun, info: JobInfo, cluster: Object, *, submitter_done: bool) -> None:
    terminal = info.status.is_terminal and (submitter_done or not run.has_submitter)
    state: JobDeploymentStatus = "Running"
    reason: JobFailedReason | None = None
    if terminal:
        state, reason = ("Failed", "AppFailed") if info.status == "FAILED" else ("Complete", None)
    run.set("rayClusterStatus", cluster.get("status") or {})
    run.set("jobStatus", info.status.value)
    run.set_state(state)
    run.set("reason", reason)
    run.set("message", info.message)
    times = dict(run.get("rayJobInfo") or {})
    for field, value in (("startTime", info.start_time), ("endTime", info.end_time)):
        if value:
            times[field] = epoch_ms(value)
    run.set("rayJobInfo", times)


def _submit(run: JobRun, dashboard: DashboardClient) -> bool:
    """HTTPMode: POST the job. True when the status changed (the failure timer)."""
    spec = run.job.spec
    try:
        dashboard.submit_job(
            JobSubmission(
                entrypoint=(spec.entrypoint or "").strip(),
                submission_id=str(run.get("jobId") or "") or None,
                runtime_env=_runtime_env(spec.runtime_env_yaml),
                metadata=spec.metadata,
                entrypoint_num_cpus=spec.entrypoint_num_cpus,
                entrypoint_num_gpus=spec.entrypoint_num_gpus,
                entrypoint_resources=_resources(spec.entrypoint_resources),
            )
        )
    except DuplicateSubmission:
        # Ours: the job exists after all (a GET raced a submit); the next pass reads it.
        return clear_check_failure(run)
    except DashboardError as exc:
        log.info("%s: submitting %s: %s", run.key, run.get("jobId"), exc)
        return record_check_failure(run)
    return clear_check_failure(run)


def _runtime_env(text: str | None) -> dict[str, Any] | None:
    # The reader K8sJobMode's submit line and validation use: the same dialect (a date
    # or 12:30 stays a string) and the same bounds; validation refused worse already.
    if not text:
        return None
    loaded = load_yaml(text)
    return loaded if isinstance(loaded, dict) else None


def _resources(text: str | None) -> dict[str, float] | None:
    if not text:
        return None
    loaded = json.loads(text)
    return {str(k): float(v) for k, v in loaded.items()} if isinstance(loaded, dict) else None


def _check_submitter(run: JobRun, cluster: Object) -> tuple[bool, datetime.datetime | None]:
    """Whether the submitter failed (status set), and when it finished, if it did."""
    if run.mode == "K8sJobMode":
        job = children.submitter_job(run)
        conditions = (job.get("status") or {}).get("conditions") or ()
        failed = next((c for c in conditions if _true(c, "Failed")), None)
        if failed is not None:
            _submitter_failed(
                run,
                "Job submission has failed. Reason: "
                f"{failed.get('reason', '')}. Message: {failed.get('message', '')}",
            )
        done = next((c for c in conditions if _true(c, "Complete") or _true(c, "Failed")), None)
        return failed is not None, parse_time((done or {}).get("lastTransitionTime"))  # fmt: skip
    head = children.head_pod(run, cluster)
    if head is None:
        run.fail("AppFailed", "Ray head pod not found.")
        return True, None
    statuses = (head.get("status") or {}).get("containerStatuses") or ()
    mine: Object = next((s for s in statuses if s.get("name") == SUBMITTER_CONTAINER), {})
    terminated = (mine.get("state") or {}).get("terminated") or {}
    if run.tools.options.gates.enabled(SIDECAR_RESTART_GATE):
        # The container restarts on failure: an exit is final only once the restarts
        # are used up (its script checks `ray job status` before submitting again).
        config = run.job.spec.submitter_config
        limit = config.backoff_limit if config is not None else None
        failed = _sidecar_restarts_exhausted(
            mine, terminated, SUBMITTER_BACKOFF_LIMIT if limit is None else limit
        )
        if failed:
            _submitter_failed(
                run,
                f"Ray head pod submitter container {SUBMITTER_CONTAINER} terminated "
                "after exceeding the maximum restart count",
            )
        return failed, parse_time(terminated.get("finishedAt"))
    failed = bool(terminated) and terminated.get("exitCode", 0) != 0
    if failed:
        _submitter_failed(
            run,
            f"Ray head pod container {SUBMITTER_CONTAINER} terminated with "
            f"exit code {terminated.get('exitCode')}: {terminated.get('reason', '')}",
        )
    return failed, parse_time(terminated.get("finishedAt"))  # fmt: skip


def _sidecar_restarts_exhausted(status: Object, terminated: Object, limit: int) -> bool:
    """SidecarSubmitterRestart: the submitter has failed at least once (a last
    termination is recorded), has not now ended with success, and was restarted
    ``limit`` times (submitterConfig.backoffLimit, default 2)."""
    if not (status.get("lastState") or {}).get("terminated"):
        return False
    if terminated and terminated.get("exitCode", 0) == 0:
        return False
    return int(status.get("restartCount") or 0) >= limit


def _submitter_failed(run: JobRun, message: str) -> None:
    if run.get("jobStatus") == "FAILED":
        run.fail("AppFailed", None)
    else:
        run.fail("SubmissionFailed", message)


def _submitter_finished_long_ago(run: JobRun, finished_at: datetime.datetime | None) -> bool:
    if finished_at is None or run.now() < later(finished_at, SUBMITTER_FINISHED_TIMEOUT):
        return False
    run.set("jobStatus", "FAILED")
    run.fail("JobDeploymentStatusTransitionGracePeriodExceeded", "The RayJob submitter "
             f"finished at {_go_datetime(finished_at)} but the ray job did not reach terminal "
             f"state within {int(SUBMITTER_FINISHED_TIMEOUT)}s")  # fmt: skip
    return True


def on_suspending_or_retrying(run: JobRun) -> Result | None:
    """Release the cluster (and submitter) first; only then move on, so a quick
    suspend/resume never leaks a cluster."""
    cluster_gone = children.delete_cluster(run)
    submitter_gone = children.delete_submitter(run)
    if not (cluster_gone and submitter_gone):
        return _again(run)
    cleanup_batch_scheduler(run, cluster_gone=True)
    for field in (
        "rayClusterStatus",
        "rayClusterName",
        "dashboardURL",
        "jobId",
        "message",
        "reason",
        "rayJobInfo",
        "jobStatusCheckFailureStartTime",
        "jobStatus",
    ):
        run.set(field, None)  # fmt: skip
    # Retrying goes back to New, which KubeRay spells "" (unset), the key of on_new.
    run.set_state("Suspended" if run.state == "Suspending" else "")
    return None


def cleanup_batch_scheduler(run: JobRun, *, cluster_gone: bool = False) -> None:
    """Shrink the RayJob's gang to what its cluster still holds (KubeRay's
    cleanupBatchSchedulerResources), with an Event either way; a failure raises.
    ``cluster_gone``: the server said so (a delete answered NotFound), whatever the
    cache still holds."""
    scheduler = run.tools.options.render.batch_scheduler
    if not scheduler:
        return
    where = f"{run.namespace}/{run.name}"
    try:
        caches = (run.tools.caches.pod_groups, run.tools.caches.clusters)
        cleaned = batchscheduler.cleanup_on_completion(
            run.tools.client, caches, scheduler, run.job, str(run.get("rayClusterName") or ""),
            cluster_gone=cluster_gone,
        )  # fmt: skip
    except ApiError as exc:
        run.event("Warning", JobReason.FAILED_TO_CLEANUP_BATCH_SCHEDULER,
                  f"Failed to cleanup batch scheduler resources for RayJob {where}: {exc}",
                  Action.CLEANUP)  # fmt: skip
        raise
    if cleaned:
        run.event("Normal", JobReason.BATCH_SCHEDULER_CLEANED_UP,
                  f"Cleaned up batch scheduler resources for RayJob {where}",
                  Action.CLEANUP)  # fmt: skip


def on_finished(run: JobRun) -> Result:
    """``finished.py``, then the gang's cleanup on every pass (KubeRay defers it, so it
    runs whatever the deletion step did; a failure is only logged there)."""
    try:
        return finished.on_finished(run)
    finally:
        try:
            cleanup_batch_scheduler(run)
        except ApiError as exc:
            log.error("%s: failed to cleanup batch scheduler resources: %s", run.key, exc)


def on_suspended(run: JobRun) -> Result | None:
    if run.job.spec.suspend:
        return Result()
    run.set("jobStatus", None)
    run.set_state("")
    return None


STATES: Final[dict[JobDeploymentStatus, Handler]] = {
    "": on_new,
    "Initializing": on_initializing,
    "Waiting": on_waiting,
    "Running": on_running,
    "Suspending": on_suspending_or_retrying,
    "Retrying": on_suspending_or_retrying,
    "Suspended": on_suspended,
    "Complete": on_finished,
    "Failed": on_finished,
}


def _true(condition: Object, type_: str) -> bool:
    return condition.get("type") == type_ and condition.get("status") == "True"


def _go_datetime(moment: datetime.datetime) -> str:
    """Go's ``time.DateTime`` layout, as KubeRay's messages print times."""
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S")
