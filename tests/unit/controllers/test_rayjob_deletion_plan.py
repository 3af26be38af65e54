"""The pure planning of a finished RayJob's deletions (``finished.plan_rules``,
``finished.plan_at``): which rules match, which are due, which one runs, and when the
controller looks again."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from operator_runtime.api.rayjob import DeletionRule
from operator_runtime.controllers.rayjob.finished import (
    IMPACT,
    Plan,
    plan_at,
    plan_rules,
    requeue_delay,
)

ENDED = datetime.datetime(2026, 1, 1, 12, 0, 0, tzinfo=datetime.UTC)
SUCCEEDED = {"jobStatus": "SUCCEEDED", "jobDeploymentStatus": "Complete"}
FAILED = {"jobStatus": "FAILED", "jobDeploymentStatus": "Failed"}


def at(seconds: float) -> datetime.datetime:
    return ENDED + datetime.timedelta(seconds=seconds)


def rule(policy: str, ttl: int = 0, **condition: Any) -> DeletionRule:
    return DeletionRule.model_validate(
        {
            "policy": policy,
            "condition": {"ttlSeconds": ttl, **(condition or {"jobStatus": "SUCCEEDED"})},
        }
    )


def never_done(policy: str) -> bool:
    return False


STAGED = [rule("DeleteWorkers", 0), rule("DeleteCluster", 4), rule("DeleteSelf", 8)]


def test_plan_at_runs_a_due_policy_and_never_looks_again() -> None:
    assert plan_at("DeleteCluster", at(3), at(3)) == Plan("DeleteCluster", None)
    assert plan_at("DeleteCluster", at(3), at(10)) == Plan("DeleteCluster", None)


def test_plan_at_waits_for_a_policy_ahead() -> None:
    assert plan_at("DeleteCluster", at(3), at(2.9)) == Plan(None, at(3))


@pytest.mark.parametrize(
    ("now", "expected"),
    [
        (0.0, Plan("DeleteWorkers", at(4))),
        (3.9, Plan("DeleteWorkers", at(4))),
        (4.0, Plan("DeleteCluster", at(8))),
        (8.0, Plan("DeleteSelf", None)),
        (100.0, Plan("DeleteSelf", None)),
    ],
)
def test_the_most_destructive_due_rule_runs_and_the_earliest_ahead_is_next(
    now: float, expected: Plan
) -> None:
    assert plan_rules(STAGED, SUCCEEDED, ENDED, at(now), never_done) == expected


def test_one_rule_per_pass_even_when_several_are_due() -> None:
    rules = [rule("DeleteNone", 0), rule("DeleteWorkers", 0), rule("DeleteCluster", 0)]
    assert plan_rules(rules, SUCCEEDED, ENDED, at(1), never_done) == Plan("DeleteCluster", None)


def test_done_rules_are_skipped() -> None:
    def cluster_gone(policy: str) -> bool:
        return policy in ("DeleteWorkers", "DeleteCluster", "DeleteNone")

    assert plan_rules(STAGED, SUCCEEDED, ENDED, at(5), cluster_gone) == Plan(None, at(8))
    done = {"DeleteCluster"}
    plan = plan_rules(STAGED, SUCCEEDED, ENDED, at(5), lambda p: p in done)
    assert plan == Plan("DeleteWorkers", at(8))


def test_done_is_asked_only_about_due_rules() -> None:
    asked: list[str] = []

    def done(policy: str) -> bool:
        asked.append(policy)
        return False

    plan_rules(STAGED, SUCCEEDED, ENDED, at(1), done)
    assert asked == ["DeleteWorkers"]


def test_a_rule_for_another_outcome_never_fires() -> None:
    rules = [rule("DeleteCluster", 0, jobStatus="FAILED")]
    assert plan_rules(rules, SUCCEEDED, ENDED, at(100), never_done) == Plan(None, None)
    assert plan_rules(rules, FAILED, ENDED, at(0), never_done) == Plan("DeleteCluster", None)


def test_a_deployment_status_condition_matches_the_rayjob_state() -> None:
    rules = [rule("DeleteCluster", 2, jobDeploymentStatus="Failed")]
    assert plan_rules(rules, SUCCEEDED, ENDED, at(100), never_done) == Plan(None, None)
    assert plan_rules(rules, FAILED, ENDED, at(1), never_done) == Plan(None, at(2))
    assert plan_rules(rules, FAILED, ENDED, at(2), never_done) == Plan("DeleteCluster", None)
    # A failure the controller gave up on without a Ray job status still matches.
    gave_up = {"jobStatus": "", "jobDeploymentStatus": "Failed"}
    assert plan_rules(rules, gave_up, ENDED, at(2), never_done) == Plan("DeleteCluster", None)


def test_rules_of_both_kinds_match_together() -> None:
    rules = [
        rule("DeleteWorkers", 5, jobStatus="FAILED"),
        rule("DeleteCluster", 1, jobDeploymentStatus="Failed"),
        rule("DeleteSelf", 0, jobStatus="SUCCEEDED"),
    ]
    assert plan_rules(rules, FAILED, ENDED, at(1), never_done) == Plan("DeleteCluster", at(5))


def test_a_due_rule_before_an_ahead_one_in_list_order() -> None:
    rules = [rule("DeleteSelf", 8), rule("DeleteCluster", 4), rule("DeleteWorkers", 0)]
    assert plan_rules(rules, SUCCEEDED, ENDED, at(0), never_done) == Plan("DeleteWorkers", at(4))


def test_no_rules_no_plan() -> None:
    assert plan_rules([], SUCCEEDED, ENDED, at(0), never_done) == Plan(None, None)


def test_impact_order_is_kuberays() -> None:
    assert sorted(IMPACT, key=IMPACT.__getitem__, reverse=True) == [
        "DeleteSelf", "DeleteCluster", "DeleteWorkers", "DeleteNone",
    ]  # fmt: skip


@pytest.mark.parametrize(("due", "now", "delay"), [(4, 0, 6.0), (8, 4.5, 5.5), (3, 3, 2.0)])
def test_the_next_look_is_due_minus_now_plus_two_seconds(
    due: float, now: float, delay: float
) -> None:
    assert requeue_delay(at(due), at(now)) == pytest.approx(delay)


LAST_SECOND = datetime.datetime.max.replace(tzinfo=datetime.UTC)
INT32_MAX = 2**31 - 1


def test_the_largest_ttl_after_a_time_near_the_calendars_end_does_not_overflow() -> None:
    """``ended`` comes from a status anyone with status rights can write; the largest
    TTL the API admits, added to a time close to year 9999, once raised OverflowError
    on every pass. The deadline is then simply never reached."""
    ended = datetime.datetime(9999, 12, 1, tzinfo=datetime.UTC)
    plan = plan_rules([rule("DeleteCluster", INT32_MAX)], SUCCEEDED, ended, ended, never_done)
    assert plan == Plan(None, LAST_SECOND)
    assert requeue_delay(LAST_SECOND, ended) > 0
