"""The review's RayCronJob verdicts: template changes reach only later runs, suspend and
resume, the feature gate, deletion (docs/conformance.md, "What the review predicts")."""

from __future__ import annotations

import copy
from typing import Any

from components.review import ReviewSettings
from components.review.raycronjob import raycronjob_verdict
from operator_runtime.api import FeatureGates
from operator_runtime.render import RenderOptions
from operator_runtime.render.resources import format_quantity
from tests.components.review_previews import object_change
from tests.components.test_review_rayjob import job

GATE_ON = ReviewSettings(options=RenderOptions(feature_gates=FeatureGates(ray_cron_job=True)))


def cron(**spec: Any) -> dict[str, Any]:
    """Hourly, each run the RayJob of test_review_rayjob (a 3-pod cluster and a submitter)."""
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCronJob",
        "metadata": {"name": "nightly", "namespace": "default"},
        "spec": {"schedule": "0 * * * *", "jobTemplate": job()["spec"], **spec},
    }


def judge(
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
    settings: ReviewSettings = GATE_ON,
):
    return raycronjob_verdict(
        object_change("RayCronJob", before, after, name="nightly"),
        settings,
    )


def edited(document: dict[str, Any], edit: Any) -> dict[str, Any]:
    copied = copy.deepcopy(document)
    edit(copied)
    return copied


BASE = cron()


def test_a_template_change_reaches_only_later_runs() -> None:
    after = edited(BASE, lambda d: d["spec"]["jobTemplate"].update(entrypoint="python b.py"))
    verdict = judge(BASE, after)
    assert verdict.summary == "template changed: only RayJobs created from now on get it"
    assert (verdict.pods_created, verdict.pods_deleted) == (0, 0)
    assert verdict.effects[0].startswith("jobTemplate: only the RayJobs created from now on")


def test_a_new_schedule_counts_from_the_last_tick() -> None:
    verdict = judge(BASE, edited(BASE, lambda d: d["spec"].update(schedule="30 2 * * *")))
    assert verdict.effects[0] == "the next tick comes from the new schedule, after the last one run"


def test_suspend_stops_new_runs_only() -> None:
    verdict = judge(BASE, cron(suspend=True))
    assert verdict.summary == "suspended: no new RayJob; those already made go on"
    assert verdict.pods_deleted == 0


def test_resume_runs_at_most_the_latest_missed_tick() -> None:
    verdict = judge(cron(suspend=True), BASE)
    assert verdict.summary.startswith("resumed: at most one RayJob at once")
    assert verdict.pods_created == 4  # one run: its cluster's 3 pods and the submitter
    assert format_quantity(verdict.peak["cpu"]) == "3500m"
    assert "MissedSchedules" in verdict.effects[0]


def test_created_says_what_each_run_holds() -> None:
    verdict = judge(None, BASE)
    assert verdict.summary == (
        "created: a RayJob on each tick from the first after now, each run on a new cluster "
        "of 3 pod(s) and a submitter pod"
    )
    assert not verdict.findings


def test_without_the_gate_nothing_runs() -> None:
    verdict = judge(None, BASE, ReviewSettings())
    assert [f.rule for f in verdict.findings] == ["raycronjob-gate-off"]


def test_deletion_takes_its_rayjobs() -> None:
    verdict = judge(BASE, None)
    assert verdict.summary == "deleted: every RayJob it made is deleted, with their clusters"
