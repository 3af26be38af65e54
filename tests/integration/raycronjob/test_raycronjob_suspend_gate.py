"""When a RayCronJob makes nothing: suspended, invalid, or the ``RayCronJob`` feature
gate off (no controller at all)."""

from __future__ import annotations

import datetime
import time

from hack.localcluster import LocalCluster
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.kinds import RAY_CRON_JOB
from tests.integration.raycronjob.conftest import (
    created_at,
    cron_operator,
    events,
    fake_clock_at,
    jobs_of,
    last_schedule,
    next_five,
    raycronjob,
    rfc3339,
    unix_minutes,
)
from tests.waiting import wait_for

FIVE_MINUTES = datetime.timedelta(minutes=5)


def _poke(kube: KubeClient, namespace: str, name: str, value: str) -> None:
    """Change an annotation: the controller looks at the RayCronJob right now."""
    kube.patch(RAY_CRON_JOB, name, namespace, {"metadata": {"annotations": {"test/poke": value}}})


def test_suspend_stops_creation_and_resume_runs_only_the_latest_tick(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str
) -> None:
    cron = kube.create(raycronjob("pausable", namespace, "*/5 * * * *"))
    first = next_five(created_at(cron))
    clock = fake_clock_at(created_at(cron))
    with cron_operator(ray_crds, namespace, clock):
        clock.advance((first - clock.now()).total_seconds())
        wait_for(
            "the first tick", lambda: last_schedule(kube, namespace, "pausable") == rfc3339(first)
        )
        kube.patch(RAY_CRON_JOB, "pausable", namespace, {"spec": {"suspend": True}})
        wait_for(
            "SuspendedRayCronJob",
            lambda: events(kube, namespace, "SuspendedRayCronJob", "pausable"),
        )
        for step in range(1, 4):  # three ticks pass, each followed by a fresh pass
            clock.advance(FIVE_MINUTES.total_seconds())
            _poke(kube, namespace, "pausable", str(step))
        time.sleep(3)
        assert set(jobs_of(kube, namespace, "pausable")) == {f"pausable-{unix_minutes(first)}"}
        assert last_schedule(kube, namespace, "pausable") == rfc3339(first)
        # One per pass (KubeRay's too); passes minutes apart on the fake clock are not
        # aggregated into one series.
        suspended = events(kube, namespace, "SuspendedRayCronJob", "pausable")
        assert {(e["type"], e["action"]) for e in suspended} == {("Normal", "Suspend")}

        kube.patch(RAY_CRON_JOB, "pausable", namespace, {"spec": {"suspend": False}})
        latest = first + 3 * FIVE_MINUTES
        wait_for(
            "the tick after resuming",
            lambda: last_schedule(kube, namespace, "pausable") == rfc3339(latest),
        )
        wait_for("MissedSchedules", lambda: events(kube, namespace, "MissedSchedules", "pausable"))
    assert sorted(jobs_of(kube, namespace, "pausable")) == sorted(
        f"pausable-{unix_minutes(t)}" for t in (first, latest)
    )
    (missed,) = events(kube, namespace, "MissedSchedules", "pausable")
    assert missed["note"].startswith("missed 2 scheduled time(s)")


def test_an_invalid_raycronjob_gets_a_warning_and_makes_nothing(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str
) -> None:
    cron = kube.create(raycronjob("broken", namespace, "61 * * * *"))
    clock = fake_clock_at(created_at(cron))
    with cron_operator(ray_crds, namespace, clock):
        reason = "InvalidRayCronJobSpec"
        (event,) = wait_for(reason, lambda: events(kube, namespace, reason, "broken"))
        clock.advance(datetime.timedelta(hours=2).total_seconds())
        _poke(kube, namespace, "broken", "after two hours")
        time.sleep(3)
    assert event["type"] == "Warning" and event["action"] == "Validate"
    assert "spec.schedule" in event["note"] and "RAYCRONJOB_INVALID_SCHEDULE" in event["note"]
    assert jobs_of(kube, namespace, "broken") == {}
    assert last_schedule(kube, namespace, "broken") is None


def test_with_the_gate_off_there_is_no_controller_and_nothing_is_made(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str
) -> None:
    cron = kube.create(raycronjob("gated", namespace, "* * * * *"))
    clock = fake_clock_at(created_at(cron))
    with cron_operator(ray_crds, namespace, clock, gate=False) as running:
        assert running.built == []
        clock.advance(datetime.timedelta(minutes=10).total_seconds())
        _poke(kube, namespace, "gated", "ten minutes later")
        time.sleep(3)
    assert jobs_of(kube, namespace, "gated") == {}
    assert last_schedule(kube, namespace, "gated") is None
    assert events(kube, namespace, "SuspendedRayCronJob", "gated") == []
    with cron_operator(ray_crds, namespace, clock, gate=True) as running:
        assert running.built == ["raycronjob"]
        wait_for("the gate-on operator's RayJob", lambda: jobs_of(kube, namespace, "gated"))
