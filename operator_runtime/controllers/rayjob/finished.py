"""A finished RayJob (Complete or Failed): what to delete, and when.

Three ways, checked in this order, all measured from ``status.endTime``:

- ``deletionStrategy.deletionRules`` (gate RayJobDeletionPolicy): every rule whose
  condition matches is due at endTime + ttlSeconds; of the due rules not yet done, ONE
  runs per pass, the most destructive first (DeleteSelf > DeleteCluster > DeleteWorkers
  > DeleteNone), and the pass comes back for the next;
- legacy ``onSuccess``/``onFailure``: the policy of the job's outcome, at endTime +
  ttlSecondsAfterFinished;
- ``shutdownAfterJobFinishes``: at endTime + ttlSecondsAfterFinished the cluster goes
  (or the RayJob itself with ``DELETE_RAYJOB_CR_AFTER_JOB_FINISHES=true``).

A RayJob on a ``clusterSelector`` cluster never deletes anything. The status is not
written here: a finished RayJob's status is final.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from operator_runtime.api.rayjob import DeletionRule
from operator_runtime.api.reasons import Action, JobReason
from operator_runtime.controllers.rayjob import children
from operator_runtime.controllers.rayjob.options import DELETION_SLACK_SECONDS
from operator_runtime.controllers.rayjob.run import JobRun
from operator_runtime.runtime import kinds
from operator_runtime.runtime.clock import later
from operator_runtime.runtime.errors import NotFound
from operator_runtime.runtime.kinds import Object
from operator_runtime.runtime.reconcile import Result

IMPACT: Final = {"DeleteSelf": 4, "DeleteCluster": 3, "DeleteWorkers": 2, "DeleteNone": 1}


@dataclass(frozen=True, slots=True)
class Plan:
    """What one pass over a finished RayJob does: at most one policy now, and when to
    look again (None: never)."""

    policy: str | None
    look_again_at: datetime.datetime | None


def on_finished(run: JobRun) -> Result:
    if run.selector_mode:
        return Result()
    spec = run.job.spec
    strategy = spec.deletion_strategy
    ended = run.time("endTime") or run.now()
    if run.tools.options.gates.ray_job_deletion_policy and strategy is not None:
        if strategy.deletion_rules is not None:
            plan = plan_rules(
                strategy.deletion_rules, run.status, ended, run.now(), lambda p: _done(run, p)
            )
        else:
            outcome = {"SUCCEEDED": strategy.on_success, "FAILED": strategy.on_failure}
            chosen = outcome.get(str(run.get("jobStatus") or ""))
            policy = chosen.policy if chosen is not None else None
            if policy in (None, "DeleteNone"):
                return Result()
            plan = plan_at(
                policy,
                later(ended, spec.ttl_seconds_after_finished),
                run.now(),
            )
    elif spec.shutdown_after_job_finishes:
        policy = "DeleteSelf" if run.tools.options.delete_rayjob_after_finish else "DeleteCluster"
        plan = plan_at(policy, later(ended, spec.ttl_seconds_after_finished), run.now())
    else:
        return Result()
    if plan.policy is not None:
        execute(run, plan.policy)
    if plan.look_again_at is None:
        return Result()
    return Result(requeue_after=requeue_delay(plan.look_again_at, run.now()))


def requeue_delay(due: datetime.datetime, now: datetime.datetime) -> float:
    """Seconds until a pass after ``due``: due - now + 2 s (KubeRay's requeueDelayFor),
    never less than the 2 s."""
    wait = (due - now).total_seconds() + DELETION_SLACK_SECONDS
    return max(wait, DELETION_SLACK_SECONDS)


def plan_at(policy: str, due: datetime.datetime, now: datetime.datetime) -> Plan:
    """One policy, due at ``due``."""
    return Plan(policy, None) if now >= due else Plan(None, due)


def plan_rules(
    rules: list[DeletionRule],
    status: dict[str, object],
    ended: datetime.datetime,
    now: datetime.datetime,
    done: Callable[[str], bool],
) -> Plan:
    """The most destructive due rule not yet done, and the earliest rule still ahead.

    ``done(policy)`` says whether a policy's effect is already there."""
    due: list[str] = []
    ahead: datetime.datetime | None = None
    for rule in rules:
        condition = rule.condition
        if condition.job_status is not None:
            matches = condition.job_status == status.get("jobStatus")
        else:
            matches = condition.job_deployment_status == status.get("jobDeploymentStatus")
        if not matches:
            continue
        at = later(ended, condition.ttl_seconds)
        if now < at:
            ahead = at if ahead is None or at < ahead else ahead
            continue
        if done(rule.policy):
            continue
        due.append(rule.policy)
    chosen = max(due, key=lambda p: IMPACT[p]) if due else None
    return Plan(chosen, ahead)


def _done(run: JobRun, policy: str) -> bool:
    if policy == "DeleteNone":
        return True
    if policy == "DeleteSelf":
        return False
    cluster = _current_cluster(run)
    if cluster is None or cluster["metadata"].get("deletionTimestamp"):
        return True
    if policy == "DeleteCluster":
        return False
    groups = (cluster.get("spec") or {}).get("workerGroupSpecs") or ()
    return all(group.get("suspend") is True for group in groups)


def _current_cluster(run: JobRun) -> Object | None:
    name = str(run.get("rayClusterName") or "")
    return run.tools.client.find(kinds.RAY_CLUSTER, name, run.namespace) if name else None


def execute(run: JobRun, policy: str) -> None:
    if policy == "DeleteCluster":
        children.delete_cluster(run)
    elif policy == "DeleteWorkers":
        children.suspend_workers(run)
    elif policy == "DeleteSelf":
        try:
            run.tools.client.delete(kinds.RAY_JOB, run.name, run.namespace)
        except NotFound:
            return
        note = f"Deleted RayJob {run.namespace}/{run.name} ({policy})"
        run.event("Normal", JobReason.DELETED_RAYJOB, note, Action.DELETE)
