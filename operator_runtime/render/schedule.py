"""The schedule of a RayCronJob, as pure functions of times: no client, no clock, no
environment (the operator's local zone is passed in; the controller reads it).

A schedule is what robfig/cron's ``ParseStandard`` accepts (validation has already
checked it): five fields, a descriptor (``@hourly``) or ``@every <Go duration>``.
Five fields run through croniter in the RayCronJob's zone (``spec.timeZone``, else the
operator's local zone, as KubeRay's ``TZ=<zone>`` prefix and Go's ``time.Local`` do);
``@every`` is a fixed delay from the previous tick, whatever the zone.

Used by the RayCronJob controller and by ``render`` (the RayJob a RayCronJob creates
next). ``plan`` decides one pass: which tick is due now, and which missed ticks are skipped.
KubeRay v1.7.0 runs every missed tick, one per pass; we run only the most recent one,
as Kubernetes' CronJob does, and report the rest (docs/conformance.md).
"""

from __future__ import annotations

import datetime
import zoneinfo
from dataclasses import dataclass
from typing import Final, Protocol

from croniter import croniter

from operator_runtime.api.validation._syntax import parse_go_duration

UTC: Final = datetime.UTC
SECOND: Final = datetime.timedelta(seconds=1)
MAX_COUNTED_MISSES: Final = 10_000
"""Missed ticks are counted one by one up to here; a longer backlog (``@every 1s`` down
for a day) is reported as "more than" this, and its latest tick found directly."""
DESCRIPTORS: Final = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
"""robfig/cron's descriptors as five fields."""


class Schedule(Protocol):
    def next_after(self, moment: datetime.datetime) -> datetime.datetime:
        """The first tick strictly after ``moment`` (robfig's ``Next``), in UTC."""
        ...

    def latest(self, anchor: datetime.datetime, now: datetime.datetime) -> datetime.datetime:
        """The last tick at or before ``now`` of the series that starts after ``anchor``
        (only called when there is one)."""
        ...


@dataclass(frozen=True, slots=True)
class CronSchedule:
    """Five cron fields read in ``zone``.

    A tick is an instant whose wall clock in ``zone`` matches the fields, as in robfig's
    ``SpecSchedule.Next``, which walks real time and checks the local fields:

    - spring forward: a wall time that does not exist that day (``30 2 * * *`` in
      America/New_York on the second Sunday of March) is no tick; the schedule fires
      the next day. croniter instead moves it to the first instant after the gap
      (03:00 EDT), so its answer is checked against the clock and skipped;
    - fall back: a wall time that happens twice (``30 1 * * *`` on the first Sunday of
      November) is two instants, and both are ticks (01:30 EDT, then 01:30 EST), as
      robfig's minute step from 01:59 EDT lands on 01:00 EST and matches again.
    """

    fields: str
    zone: datetime.tzinfo

    def next_after(self, moment: datetime.datetime) -> datetime.datetime:
        # Strictly after the whole second: ticks fall on whole minutes, so this is
        # robfig's "from the next whole second on".
        found = _whole_second(moment).astimezone(self.zone)
        for _ in range(_MOVED_TICKS_LIMIT):
            found = croniter(self.fields, found).get_next(datetime.datetime)
            if self._on_the_clock(found):
                break
        return found.astimezone(UTC)

    def latest(self, anchor: datetime.datetime, now: datetime.datetime) -> datetime.datetime:
        found = (_whole_second(now) + SECOND).astimezone(self.zone)
        for _ in range(_MOVED_TICKS_LIMIT):
            found = croniter(self.fields, found).get_prev(datetime.datetime)
            if self._on_the_clock(found):
                break
        return found.astimezone(UTC)

    def _on_the_clock(self, found: datetime.datetime) -> bool:
        """croniter's answer is a real tick: its wall clock has the fields' minute and
        hour, not a time moved out of a spring-forward gap."""
        (minutes, hours, *_days), _ = croniter.expand(self.fields)
        local = found.astimezone(self.zone)
        return _allows(minutes, local.minute) and _allows(hours, local.hour)


_MOVED_TICKS_LIMIT: Final = 64
"""croniter answers at most a few moved ticks in a row (one per gap); a bound anyway."""


def _allows(field: list[int | str], value: int) -> bool:
    return "*" in field or value in field


@dataclass(frozen=True, slots=True)
class EverySchedule:
    """``@every <duration>``: robfig's ``ConstantDelaySchedule`` (whole seconds, ≥ 1 s)."""

    delay: datetime.timedelta

    def next_after(self, moment: datetime.datetime) -> datetime.datetime:
        return _whole_second(moment) + self.delay

    def latest(self, anchor: datetime.datetime, now: datetime.datetime) -> datetime.datetime:
        start = _whole_second(anchor)
        return start + self.delay * ((now - start) // self.delay)


def parse_schedule(schedule: str, zone: datetime.tzinfo) -> Schedule:
    """The schedule of a validated ``spec.schedule`` in ``zone``."""
    text = schedule.strip()
    if text.startswith("@every "):
        seconds = parse_go_duration(text.removeprefix("@every ").strip())
        if seconds is None:
            raise ValueError(f"invalid @every duration in {schedule!r}")
        return EverySchedule(datetime.timedelta(seconds=max(int(seconds), 1)))
    fields = DESCRIPTORS.get(text, text)
    if len(fields.split()) != 5 or not croniter.is_valid(fields):
        raise ValueError(f"invalid cron schedule {schedule!r}")
    return CronSchedule(fields, zone)


def zone_of(time_zone: str | None, local: datetime.tzinfo) -> datetime.tzinfo:
    """``spec.timeZone`` as a zone: unset and ``Local`` are the operator's own zone."""
    if time_zone is None or time_zone == "Local":
        return local
    if time_zone == "UTC":
        return UTC
    return zoneinfo.ZoneInfo(time_zone)


@dataclass(frozen=True, slots=True)
class Plan:
    """One pass: the tick to run now (if any), the ticks skipped, the next tick."""

    run: datetime.datetime | None
    """The tick whose RayJob is due now: the most recent one not later than now."""
    next: datetime.datetime
    """The first tick after ``run`` (or, with nothing due, after the last schedule)."""
    skipped: int = 0
    """Ticks missed before ``run`` and never run (a gap, e.g. operator downtime)."""
    more_skipped: bool = False
    """More than ``skipped`` were missed; counting stopped at ``MAX_COUNTED_MISSES``."""
    first_skipped: datetime.datetime | None = None
    last_skipped: datetime.datetime | None = None


def plan(
    schedule: Schedule,
    last: datetime.datetime,
    now: datetime.datetime,
    limit: int = MAX_COUNTED_MISSES,
) -> Plan:
    """What is due at ``now``, ``last`` being the last scheduled tick (or the creation
    time of a RayCronJob never scheduled)."""
    first = schedule.next_after(last)
    if first > now:
        return Plan(run=None, next=first)
    run, previous, skipped = first, None, 0
    while skipped < limit:
        following = schedule.next_after(run)
        if following > now:
            return _planned(schedule, run, previous, skipped, first, more=False)
        previous, run, skipped = run, following, skipped + 1
    latest = schedule.latest(last, now)
    if latest <= run:  # counting stopped exactly at the latest tick
        return _planned(schedule, run, previous, skipped, first, more=False)
    before = schedule.latest(last, latest - SECOND)
    return _planned(schedule, latest, before, skipped, first, more=True)


def _planned(
    schedule: Schedule,
    run: datetime.datetime,
    previous: datetime.datetime | None,
    skipped: int,
    first: datetime.datetime,
    *,
    more: bool,
) -> Plan:
    if skipped == 0:
        return Plan(run=run, next=schedule.next_after(run))
    return Plan(
        run=run, next=schedule.next_after(run), skipped=skipped, more_skipped=more,
        first_skipped=first, last_skipped=previous,
    )  # fmt: skip


def job_name(cron_name: str, tick: datetime.datetime) -> str:
    """``<cron>-<unix minutes of the tick>``: a second create for one tick collides
    (AlreadyExists) instead of running twice."""
    return f"{cron_name}-{int(tick.timestamp()) // 60}"


def format_tick(tick: datetime.datetime) -> str:
    """RFC 3339 in UTC, to the second (Go's ``time.RFC3339`` of ``.UTC()``)."""
    return tick.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str) -> datetime.datetime:
    """An RFC 3339 ``metav1.Time`` as an aware UTC datetime."""
    return datetime.datetime.fromisoformat(text).astimezone(UTC)


def _whole_second(moment: datetime.datetime) -> datetime.datetime:
    return moment.astimezone(UTC).replace(microsecond=0)
