"""RayCronJob (ray.io/v1, feature gate RayCronJob): create a RayJob on a cron schedule."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from operator_runtime.api._base import KubeModel
from operator_runtime.api.common import API_VERSION, ObjectMeta, Time
from operator_runtime.api.rayjob import RayJobSpec


class RayCronJobSpec(KubeModel):
    """Desired state of a RayCronJob."""

    job_template: RayJobSpec = Field(description="Spec of each RayJob created.")
    schedule: str = Field(description="Standard 5-field cron expression, or @hourly etc.")
    time_zone: str | None = Field(
        default=None,
        min_length=1,
        description="IANA time zone of the schedule; the operator's local zone when unset.",
    )
    suspend: bool | None = Field(default=None, description="Stop creating new RayJobs.")


class RayCronJobStatus(KubeModel):
    """Observed state of a RayCronJob."""

    last_schedule_time: Time | None = Field(
        default=None, description="Scheduled time of the last RayJob created."
    )


class RayCronJob(KubeModel):
    """Creates RayJobs on a schedule, like a batch CronJob."""

    api_version: Literal["ray.io/v1"] = Field(default=API_VERSION, description="ray.io/v1.")
    kind: Literal["RayCronJob"] = Field(default="RayCronJob", description="RayCronJob.")
    metadata: ObjectMeta = Field(default_factory=ObjectMeta, description="Object metadata.")
    spec: RayCronJobSpec = Field(description="Desired state.")
    status: RayCronJobStatus | None = Field(default=None, description="Observed state.")
