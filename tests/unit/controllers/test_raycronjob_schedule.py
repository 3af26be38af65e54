"""The RayCronJob schedule as pure functions: the next tick, the catch-up choice after a
gap, and the names and timestamps of the RayJobs."""

from __future__ import annotations

import datetime
import zoneinfo

import pytest

from operator_runtime.controllers.raycronjob.controller import _missed_note, build_rayjob
from operator_runtime.controllers.raycronjob.schedule import (
    UTC,
    EverySchedule,
    format_tick,
    job_name,
    local_zone,
    parse_schedule,
    parse_time,
    plan,
    zone_of,
)

KOLKATA = zoneinfo.ZoneInfo("Asia/Kolkata")
BERLIN = zoneinfo.ZoneInfo("Europe/Berlin")


def at(text: str) -> datetime.datetime:
    return parse_time(text)


@pytest.mark.parametrize(
    ("schedule", "zone", "after", "expected"),
    [
        ("*/5 * * * *", UTC, "2026-01-01T00:00:00Z", "2026-01-01T00:05:00Z"),
        # A tick exactly at the start is not "after" it (robfig's Next).
        ("*/5 * * * *", UTC, "2026-01-01T00:05:00Z", "2026-01-01T00:10:00Z"),
        ("*/5 * * * *", UTC, "2026-01-01T00:04:59.900Z", "2026-01-01T00:05:00Z"),
        ("*/5 * * * *", UTC, "2026-01-01T00:05:00.500Z", "2026-01-01T00:10:00Z"),
        # Half an hour past the hour in Kolkata (UTC+5:30) is the full hour in UTC.
        ("30 * * * *", KOLKATA, "2026-01-01T00:10:00Z", "2026-01-01T01:00:00Z"),
        ("0 9 * * *", KOLKATA, "2026-01-01T00:00:00Z", "2026-01-01T03:30:00Z"),
        # Berlin's DST starts 2026-03-29: 09:00 local is 08:00 UTC before, 07:00 after.
        ("0 9 * * *", BERLIN, "2026-03-28T00:00:00Z", "2026-03-28T08:00:00Z"),
        ("0 9 * * *", BERLIN, "2026-03-29T00:00:00Z", "2026-03-29T07:00:00Z"),
        ("@hourly", UTC, "2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z"),
        ("@weekly", UTC, "2026-01-01T00:00:00Z", "2026-01-04T00:00:00Z"),  # a Sunday
        ("0 9 * JAN-MAR MON-FRI", UTC, "2026-01-02T10:00:00Z", "2026-01-05T09:00:00Z"),
        # @every: a fixed delay from the whole second of the previous tick, any zone.
        ("@every 1h30m", KOLKATA, "2026-01-01T00:00:10.700Z", "2026-01-01T01:30:10Z"),
        ("@every 500ms", UTC, "2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z"),
    ],
)
def test_next_tick(schedule: str, zone: datetime.tzinfo, after: str, expected: str) -> None:
    assert parse_schedule(schedule, zone).next_after(at(after)) == at(expected)


@pytest.mark.parametrize("schedule", ["61 * * * *", "* * * *", "@sometimes", "@every soon"])
def test_an_unparsable_schedule_is_an_error(schedule: str) -> None:
    with pytest.raises(ValueError):
        parse_schedule(schedule, UTC)


def test_nothing_due_waits_for_the_next_tick() -> None:
    outcome = plan(parse_schedule("*/5 * * * *", UTC), at("2026-01-01T00:01:00Z"),
                   at("2026-01-01T00:04:59Z"))  # fmt: skip
    assert outcome.run is None and outcome.next == at("2026-01-01T00:05:00Z")


def test_one_due_tick_runs_and_skips_nothing() -> None:
    outcome = plan(parse_schedule("*/5 * * * *", UTC), at("2026-01-01T00:00:00Z"),
                   at("2026-01-01T00:05:00Z"))  # fmt: skip
    assert outcome.run == at("2026-01-01T00:05:00Z")
    assert outcome.next == at("2026-01-01T00:10:00Z")
    assert (outcome.skipped, outcome.first_skipped, outcome.last_skipped) == (0, None, None)


def test_after_a_day_down_only_the_latest_tick_runs() -> None:
    outcome = plan(parse_schedule("* * * * *", UTC), at("2026-01-01T00:00:00Z"),
                   at("2026-01-02T00:00:30Z"))  # fmt: skip
    assert outcome.run == at("2026-01-02T00:00:00Z")
    assert outcome.skipped == 1439 and not outcome.more_skipped
    assert outcome.first_skipped == at("2026-01-01T00:01:00Z")
    assert outcome.last_skipped == at("2026-01-01T23:59:00Z")
    assert outcome.next == at("2026-01-02T00:01:00Z")


def test_two_due_ticks_skip_one() -> None:
    outcome = plan(parse_schedule("*/5 * * * *", UTC), at("2026-01-01T00:00:00Z"),
                   at("2026-01-01T00:12:00Z"))  # fmt: skip
    assert outcome.run == at("2026-01-01T00:10:00Z")
    assert outcome.skipped == 1
    assert outcome.first_skipped == outcome.last_skipped == at("2026-01-01T00:05:00Z")


@pytest.mark.parametrize(
    ("schedule", "down_for"),
    [("* * * * *", datetime.timedelta(days=30)), ("@every 1s", datetime.timedelta(days=1))],
)
def test_a_long_backlog_stops_counting_but_still_runs_the_latest(
    schedule: str, down_for: datetime.timedelta
) -> None:
    last = at("2026-01-01T00:00:00Z")
    now = last + down_for + datetime.timedelta(seconds=0.5)
    parsed = parse_schedule(schedule, UTC)
    outcome = plan(parsed, last, now, limit=1000)
    assert outcome.run == last + down_for
    assert outcome.skipped == 1000 and outcome.more_skipped
    assert outcome.last_skipped is not None
    assert parsed.next_after(outcome.last_skipped) == outcome.run
    assert outcome.next > now


def test_every_latest_keeps_the_series_of_its_anchor() -> None:
    every = EverySchedule(datetime.timedelta(seconds=7))
    anchor = at("2026-01-01T00:00:03.400Z")
    assert every.latest(anchor, at("2026-01-01T00:01:00Z")) == at("2026-01-01T00:00:59Z")


def test_names_are_the_unix_minutes_of_the_tick() -> None:
    tick = at("2026-01-01T00:05:00Z")
    assert job_name("nightly", tick) == f"nightly-{1767225900 // 60}" == "nightly-29453765"
    assert format_tick(tick.astimezone(KOLKATA)) == "2026-01-01T00:05:00Z"


def test_the_rayjob_of_a_tick() -> None:
    cron = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCronJob",
        "metadata": {"name": "nightly", "namespace": "ns", "uid": "u-1"},
        "spec": {"schedule": "* * * * *", "jobTemplate": {"entrypoint": "python x.py"}},
    }
    job = build_rayjob(cron, at("2026-01-01T00:05:00Z"))
    assert job["metadata"] == {
        "name": "nightly-29453765",
        "namespace": "ns",
        "labels": {"ray.io/cronjob-name": "nightly"},
        "annotations": {"ray.io/cronjob-scheduled-timestamp": "2026-01-01T00:05:00Z"},
        "ownerReferences": [
            {
                "apiVersion": "ray.io/v1",
                "kind": "RayCronJob",
                "name": "nightly",
                "uid": "u-1",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    assert job["spec"] == {"entrypoint": "python x.py"}
    assert job["spec"] is not cron["spec"]["jobTemplate"]


def test_the_missed_note_names_count_first_and_last() -> None:
    outcome = plan(parse_schedule("*/5 * * * *", UTC), at("2026-01-01T00:00:00Z"),
                   at("2026-01-01T00:20:00Z"))  # fmt: skip
    assert _missed_note(outcome) == (
        "missed 3 scheduled time(s) from 2026-01-01T00:05:00Z to 2026-01-01T00:15:00Z; "
        "they were skipped and only the latest, 2026-01-01T00:20:00Z, was run"
    )


def test_zones() -> None:
    local = datetime.timezone(datetime.timedelta(hours=2))
    assert zone_of(None, local) is local
    assert zone_of("Local", local) is local
    assert zone_of("UTC", local) is UTC
    assert zone_of("Asia/Kolkata", local) == KOLKATA
    assert local_zone({"TZ": ""}) is UTC
    assert local_zone({"TZ": ":Europe/Berlin"}) == BERLIN
    assert local_zone({"TZ": "Nowhere/Else"}) is UTC


# --- daylight saving: robfig/cron v3's SpecSchedule.Next ------------------------------
#
# robfig walks real time (t.Add of a minute or an hour) and checks the wall clock's
# fields at each step, so its ticks are exactly the instants whose local time matches:
# a wall time in a spring-forward gap is no tick (that day is skipped) and a wall time
# in a fall-back overlap is two ticks (01:30 EDT, then 01:30 EST). The reference below
# states that rule by brute force, minute by minute.

NEW_YORK = zoneinfo.ZoneInfo("America/New_York")  # 2025-03-09 02:00→03:00, 11-02 02:00→01:00
SYDNEY = zoneinfo.ZoneInfo("Australia/Sydney")  # 2025-10-05 02:00→03:00, 04-06 03:00→02:00
LORD_HOWE = zoneinfo.ZoneInfo("Australia/Lord_Howe")  # half an hour: 02:00→02:30, 02:00→01:30
MINUTE = datetime.timedelta(minutes=1)


def robfig_next(fields: str, zone: datetime.tzinfo, after: datetime.datetime) -> datetime.datetime:
    """The first whole minute after ``after`` whose wall clock in ``zone`` matches (fields
    with no day or month restriction)."""
    minute, hour, *rest = fields.split()
    assert rest == ["*", "*", "*"]
    moment = after.replace(second=0, microsecond=0) + MINUTE
    while True:
        local = moment.astimezone(zone)
        if (minute == "*" or local.minute in {int(m) for m in minute.split(",")}) and (
            hour == "*" or local.hour in {int(h) for h in hour.split(",")}
        ):
            return moment
        moment += MINUTE


def ticks(fields: str, zone: datetime.tzinfo, start: str, count: int) -> list[str]:
    schedule, moment, found = parse_schedule(fields, zone), at(start), []
    for _ in range(count):
        moment = schedule.next_after(moment)
        found.append(f"{moment.astimezone(zone):%m-%d %H:%M%Z}")
    return found


@pytest.mark.parametrize(
    ("fields", "zone", "start", "expected"),
    [
        # The gap: 02:30 does not exist on 03-09; robfig fires the next day, not at 03:00.
        ("30 2 * * *", NEW_YORK, "2025-03-08T12:00:00Z", ["03-10 02:30EDT", "03-11 02:30EDT"]),
        ("0 2 * * *", BERLIN, "2025-03-29T12:00:00Z", ["03-31 02:00CEST", "04-01 02:00CEST"]),
        ("30 2 * * *", SYDNEY, "2025-10-04T00:00:00Z", ["10-06 02:30AEDT", "10-07 02:30AEDT"]),
        ("15 2 * * *", LORD_HOWE, "2025-10-04T00:00:00Z", ["10-06 02:15+11", "10-07 02:15+11"]),
        # ...but the part of the hour after a half-hour gap exists.
        ("45 2 * * *", LORD_HOWE, "2025-10-04T00:00:00Z", ["10-05 02:45+11", "10-06 02:45+11"]),
        # A schedule of every hour simply has no tick in the gap.
        ("0 * * * *", NEW_YORK, "2025-03-09T05:30:00Z", ["03-09 01:00EST", "03-09 03:00EDT"]),
    ],
    ids=["new-york", "berlin", "sydney", "lord-howe-gap", "lord-howe-after-gap", "hourly"],
)
def test_spring_forward_skips_a_wall_time_that_does_not_exist(
    fields: str, zone: datetime.tzinfo, start: str, expected: list[str]
) -> None:
    assert ticks(fields, zone, start, len(expected)) == expected


@pytest.mark.parametrize(
    ("fields", "zone", "start", "expected"),
    [
        ("30 1 * * *", NEW_YORK, "2025-11-01T12:00:00Z",
         ["11-02 01:30EDT", "11-02 01:30EST", "11-03 01:30EST"]),
        ("30 2 * * *", BERLIN, "2025-10-25T12:00:00Z",
         ["10-26 02:30CEST", "10-26 02:30CET", "10-27 02:30CET"]),
        ("45 1 * * *", LORD_HOWE, "2025-04-05T00:00:00Z",
         ["04-06 01:45+11", "04-06 01:45+1030", "04-07 01:45+1030"]),
    ],
    ids=["new-york", "berlin", "lord-howe"],
)  # fmt: skip
def test_fall_back_fires_at_both_instants_of_a_repeated_wall_time(
    fields: str, zone: datetime.tzinfo, start: str, expected: list[str]
) -> None:
    """Both instants are ticks in robfig (and so in KubeRay): two RayJobs, named by
    their distinct unix minutes."""
    assert ticks(fields, zone, start, len(expected)) == expected


@pytest.mark.parametrize("zone", [NEW_YORK, BERLIN, SYDNEY, LORD_HOWE], ids=str)
@pytest.mark.parametrize("fields", ["30 2 * * *", "0,30 1,2 * * *", "0,20,40 * * * *", "5 3 * * *"])
def test_every_tick_around_both_transitions_is_robfigs(fields: str, zone: datetime.tzinfo) -> None:
    schedule = parse_schedule(fields, zone)
    for day in ("03-08", "03-29", "04-05", "10-04", "10-25", "11-01"):
        moment = at(f"2025-{day}T00:00:00Z")
        for _ in range(40):
            expected = robfig_next(fields, zone, moment)
            assert schedule.next_after(moment) == expected, (fields, zone, moment)
            moment = expected


def test_a_run_is_not_planned_for_a_wall_time_in_the_gap() -> None:
    """The controller's pass on the gap day: nothing is due at 03:00 EDT; the next tick
    is the following night's, and the latest one of a backlog is a real one too."""
    schedule = parse_schedule("30 2 * * *", NEW_YORK)
    last = at("2025-03-08T07:30:00Z")  # 03-08 02:30 EST
    outcome = plan(schedule, last, at("2025-03-09T12:00:00Z"))
    assert outcome.run is None and outcome.next == at("2025-03-10T06:30:00Z")
    assert schedule.latest(last, at("2025-03-09T12:00:00Z")) == last
