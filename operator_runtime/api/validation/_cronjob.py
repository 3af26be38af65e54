"""Rules for a RayCronJob (``ValidateRayCronJobSpec``): name, schedule, time zone and
the RayJob template."""

from __future__ import annotations

from collections.abc import Iterator

from operator_runtime.api.errors import ErrorCode as C
from operator_runtime.api.errors import Violation
from operator_runtime.api.features import FeatureGates
from operator_runtime.api.raycronjob import RayCronJob
from operator_runtime.api.validation import _names
from operator_runtime.api.validation._job import job_spec_violations
from operator_runtime.api.validation._syntax import cron_schedule_error, time_zone_error


def cronjob_violations(cron: RayCronJob, gates: FeatureGates) -> Iterator[Violation]:
    name = cron.metadata.name or ""
    if len(name) > _names.MAX_RAYCRONJOB_NAME:
        yield Violation(
            C.RAYCRONJOB_NAME_TOO_LONG,
            "metadata.name",
            f"the name has {len(name)} characters",
            f"use at most {_names.MAX_RAYCRONJOB_NAME} (room for the RayJob suffix)",
        )
    schedule = cron.spec.schedule
    if "TZ" in schedule:
        yield Violation(
            C.RAYCRONJOB_SCHEDULE_HAS_TZ,
            "spec.schedule",
            "the schedule sets TZ or CRON_TZ",
            "remove it and set spec.timeZone",
        )
    else:
        problem = cron_schedule_error(schedule)
        if problem:
            yield Violation(
                C.RAYCRONJOB_INVALID_SCHEDULE,
                "spec.schedule",
                f"invalid cron schedule {schedule!r}: {problem}",
                "use 5 fields (e.g. '0 2 * * *') or a descriptor such as @daily",
            )
    if cron.spec.time_zone is not None:
        problem = time_zone_error(cron.spec.time_zone)
        if problem:
            yield Violation(
                C.RAYCRONJOB_INVALID_TIME_ZONE,
                "spec.timeZone",
                problem,
                "use an IANA name such as Europe/Berlin or UTC",
            )
    # KubeRay validates the template as a RayJob without metadata, so no annotations.
    yield from job_spec_violations(cron.spec.job_template, {}, gates, "spec.jobTemplate")
