"""Which RayJobs a RayCronJob makes, on a clock the test moves: a simulated hour, in a
time zone too; a day of operator downtime; a status write that fails after a create."""

from __future__ import annotations

import datetime
import threading
import time
import zoneinfo
from collections.abc import Callable

from hack.localcluster import LocalCluster
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.clock import FakeClock
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

MINUTE = datetime.timedelta(minutes=1)
KOLKATA = zoneinfo.ZoneInfo("Asia/Kolkata")


def _minutes(start: datetime.datetime, end: datetime.datetime) -> list[datetime.datetime]:
    """Every whole minute in (start, end]: the oracle, independent of croniter."""
    first = start.replace(second=0, microsecond=0) + MINUTE
    return [first + i * MINUTE for i in range(int((end - first) / MINUTE) + 1)]


def _while_time_passes(clock: FakeClock, condition: Callable[[], bool]) -> Callable[[], bool]:
    """``condition``, with the fake clock moved 10 ms before each look. A pass that fails
    for a passing reason (a 5xx from a loaded API server) is retried after a backoff
    measured on this clock; a clock frozen between the test's steps would never let
    that retry come due. 300 looks move it 3 s at most, far from the next minute."""

    def moved_then_checked() -> bool:
        clock.advance(0.01)
        return condition()

    return moved_then_checked


def _wait_for_ticks(
    kube: KubeClient,
    namespace: str,
    cron: str,
    due: list[datetime.datetime],
    clock: FakeClock,
) -> None:
    """Exactly the RayJobs of ``due`` exist, and the status records the last one."""
    names = {f"{cron}-{unix_minutes(t)}" for t in due}
    wait_for(
        f"{cron}'s RayJobs {sorted(names)}",
        _while_time_passes(clock, lambda: set(jobs_of(kube, namespace, cron)) == names),
    )
    if due:
        stamp = rfc3339(due[-1])
        wait_for(
            f"{cron}'s lastScheduleTime {stamp}",
            _while_time_passes(clock, lambda: last_schedule(kube, namespace, cron) == stamp),
        )


def test_a_simulated_hour_makes_exactly_the_expected_rayjobs(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str
) -> None:
    every5 = kube.create(raycronjob("every5", namespace, "*/5 * * * *", timeZone="UTC"))
    kolkata = kube.create(raycronjob("kolkata", namespace, "30 * * * *", timeZone="Asia/Kolkata"))
    start = created_at(every5)
    end = start + datetime.timedelta(hours=1)
    minutes = _minutes(start, end)
    wanted = {
        "every5": [m for m in minutes if m.minute % 5 == 0],
        # 30 minutes past the hour in Kolkata (UTC+5:30) is the full hour in UTC.
        "kolkata": [
            m for m in minutes if m.astimezone(KOLKATA).minute == 30 and m > created_at(kolkata)
        ],
    }
    assert len(wanted["every5"]) == 12 and len(wanted["kolkata"]) == 1
    assert wanted["kolkata"][0].minute == 0
    clock = fake_clock_at(start)
    began = time.monotonic()
    with cron_operator(ray_crds, namespace, clock):
        for minute in minutes:
            clock.advance((minute - clock.now()).total_seconds())
            for cron, ticks in wanted.items():
                _wait_for_ticks(kube, namespace, cron, [t for t in ticks if t <= minute], clock)
        elapsed = time.monotonic() - began
        time.sleep(2)  # anything extra would show now
    print(f"\nsimulated hour: {len(minutes)} one-minute steps took {elapsed:.1f} s")
    for cron, ticks in wanted.items():
        jobs = jobs_of(kube, namespace, cron)
        assert sorted(jobs) == sorted(f"{cron}-{unix_minutes(t)}" for t in ticks)
        owner = kube.get(RAY_CRON_JOB, cron, namespace)["metadata"]["uid"]
        for tick in ticks:
            job = jobs[f"{cron}-{unix_minutes(tick)}"]
            assert job["metadata"]["annotations"]["ray.io/cronjob-scheduled-timestamp"] == (
                rfc3339(tick)
            )
            (ref,) = job["metadata"]["ownerReferences"]
            assert (ref["kind"], ref["uid"], ref["controller"]) == ("RayCronJob", owner, True)
            assert job["spec"]["suspend"] is True
    assert events(kube, namespace, "MissedSchedules") == []


def test_after_a_day_down_only_the_latest_tick_runs_and_the_rest_are_reported(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str
) -> None:
    cron = kube.create(raycronjob("minutely", namespace, "* * * * *"))
    clock = fake_clock_at(created_at(cron))
    first_tick = _minutes(created_at(cron), created_at(cron) + MINUTE)[0]
    with cron_operator(ray_crds, namespace, clock):
        clock.advance((first_tick - clock.now()).total_seconds())
        stamp = rfc3339(first_tick)
        wait_for(
            "the first tick",
            _while_time_passes(clock, lambda: last_schedule(kube, namespace, "minutely") == stamp),
        )
    assert set(jobs_of(kube, namespace, "minutely")) == {f"minutely-{unix_minutes(first_tick)}"}

    clock.advance(datetime.timedelta(days=1).total_seconds())  # the operator is down
    latest = first_tick + datetime.timedelta(days=1)
    began = time.monotonic()
    with cron_operator(ray_crds, namespace, clock):
        wait_for(
            "the catch-up RayJob",
            _while_time_passes(clock, lambda: len(jobs_of(kube, namespace, "minutely")) == 2),
        )
        caught_up = time.monotonic() - began
        wait_for("the MissedSchedules event", lambda: events(kube, namespace, "MissedSchedules"))
        wait_for(
            "the catch-up status",
            _while_time_passes(
                clock, lambda: last_schedule(kube, namespace, "minutely") == rfc3339(latest)
            ),
        )
        time.sleep(3)  # a backlog walked tick by tick would show here
        jobs = jobs_of(kube, namespace, "minutely")
        missed = events(kube, namespace, "MissedSchedules", "minutely")
    print(f"\ncatch-up RayJob {caught_up:.1f} s after the restart")
    assert sorted(jobs) == sorted(
        [f"minutely-{unix_minutes(first_tick)}", f"minutely-{unix_minutes(latest)}"]
    )
    assert len(missed) == 1
    (event,) = missed
    assert event["type"] == "Warning" and event.get("series") is None
    assert event["note"] == (
        f"missed 1439 scheduled time(s) from {rfc3339(first_tick + MINUTE)} to "
        f"{rfc3339(latest - MINUTE)}; they were skipped and only the latest, "
        f"{rfc3339(latest)}, was run"
    )


def test_a_failed_status_write_after_a_create_never_makes_a_second_rayjob(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str
) -> None:
    """The status write fails for real: the moment the operator's RayJob create
    returns, the test changes the RayCronJob, so the write that follows (conditional on
    the resourceVersion the operator read) gets 409 Conflict from the API server. The
    retried pass finds no lastScheduleTime, creates the same tick's RayJob again, gets
    AlreadyExists, and only then records the tick."""
    cron = kube.create(raycronjob("flaky", namespace, "*/5 * * * *"))
    tick = next_five(created_at(cron))
    seen: list[tuple[str, str]] = []
    lock = threading.Lock()

    def observe(verb: str, code: str, _seconds: float) -> None:
        if not threading.current_thread().name.startswith("raycronjob-worker"):
            return  # the event sink's own requests
        with lock:
            seen.append((verb, code))
            first_create = (verb, code) == ("create", "201") and seen.count(("create", "201")) == 1
        if first_create:
            bump = {"metadata": {"annotations": {"test/bump": "between create and write"}}}
            kube.patch(RAY_CRON_JOB, "flaky", namespace, bump)

    clock = fake_clock_at(created_at(cron))
    with cron_operator(ray_crds, namespace, clock, observe=observe):
        clock.advance((tick - clock.now()).total_seconds())
        wait_for(
            "the tick's status", lambda: last_schedule(kube, namespace, "flaky") == rfc3339(tick)
        )
        time.sleep(2)
    with lock:
        requests = list(seen)
    assert set(jobs_of(kube, namespace, "flaky")) == {f"flaky-{unix_minutes(tick)}"}
    assert requests.count(("create", "201")) == 1
    assert requests.count(("update", "409")) >= 1, requests  # the failed status write
    assert requests.count(("create", "409")) >= 1, requests  # the repeat: AlreadyExists
    assert requests[-1] == ("update", "200"), requests
