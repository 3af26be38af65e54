"""The RayCronJob controller's schedule. The pure functions of times live in
``operator_runtime.render.schedule`` (``render`` shows a RayCronJob's next RayJob with
them) and are re-exported here; only reading the operator's own zone is the controller's.
"""

from __future__ import annotations

import datetime
import zoneinfo
from collections.abc import Mapping

from operator_runtime.render.schedule import (
    DESCRIPTORS,
    MAX_COUNTED_MISSES,
    SECOND,
    UTC,
    CronSchedule,
    EverySchedule,
    Plan,
    Schedule,
    format_tick,
    job_name,
    parse_schedule,
    parse_time,
    plan,
    zone_of,
)

__all__ = [
    "DESCRIPTORS",
    "MAX_COUNTED_MISSES",
    "SECOND",
    "UTC",
    "CronSchedule",
    "EverySchedule",
    "Plan",
    "Schedule",
    "format_tick",
    "job_name",
    "local_zone",
    "parse_schedule",
    "parse_time",
    "plan",
    "zone_of",
]


def local_zone(environ: Mapping[str, str]) -> datetime.tzinfo:
    """Go's ``time.Local``: ``$TZ`` if set (empty is UTC), else ``/etc/localtime``, else
    UTC. The operator's image has no zone data of its own, so it is usually UTC.
    ``environ`` holds ``TZ`` or not (``OperatorEnvironment.tz``, read once by ``main``)."""
    name = environ.get("TZ")
    try:
        if name is not None:
            name = name.removeprefix(":")
            return zoneinfo.ZoneInfo(name) if name and name != "UTC" else UTC
        with open("/etc/localtime", "rb") as handle:
            return zoneinfo.ZoneInfo.from_file(handle, key="Local")
    except (OSError, ValueError, zoneinfo.ZoneInfoNotFoundError):
        return UTC
