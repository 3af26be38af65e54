"""Typed shapes of the Ray dashboard's Jobs and Serve answers.

Only the fields the controllers read are declared; the dashboard adds fields from one
Ray version to the next, and those are ignored rather than rejected so that a newer
head never breaks an older operator.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, JsonValue

__all__ = [
    "JobInfo",
    "JobStatus",
    "JobSubmission",
    "ServeApplication",
    "ServeDeployment",
    "ServeDetails",
    "SubmittedJob",
]


class JobStatus(StrEnum):
    """A Ray job's status, as the dashboard spells it."""

    PENDING = "PENDING"
    RUNNING = "RUNNING"
    STOPPED = "STOPPED"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"

    @property
    def is_terminal(self) -> bool:
        """A job in one of these states never changes state again."""
        return self in _TERMINAL


_TERMINAL = frozenset({JobStatus.STOPPED, JobStatus.SUCCEEDED, JobStatus.FAILED})


class _Answer(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class JobInfo(_Answer):
    """``GET /api/jobs/<id>``. Times are epoch milliseconds, as Ray sends them."""

    status: JobStatus
    entrypoint: str = ""
    job_id: str | None = None
    submission_id: str | None = None
    message: str | None = None
    error_type: str | None = None
    start_time: int | None = None
    end_time: int | None = None
    metadata: dict[str, str] | None = None
    runtime_env: dict[str, JsonValue] | None = None
    driver_exit_code: int | None = None


class SubmittedJob(_Answer):
    """``POST /api/jobs/``: the ids the head gave the new job."""

    job_id: str
    submission_id: str | None = None


class JobSubmission(BaseModel):
    """The body of ``POST /api/jobs/``; empty fields are left out of the request."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    entrypoint: str
    submission_id: str | None = None
    runtime_env: dict[str, JsonValue] | None = None
    metadata: dict[str, str] | None = None
    entrypoint_num_cpus: float | None = None
    entrypoint_num_gpus: float | None = None
    entrypoint_resources: dict[str, float] | None = None

    def body(self) -> dict[str, JsonValue]:
        """The JSON body: unset, empty and zero fields omitted, as KubeRay sends them."""
        dumped: dict[str, JsonValue] = self.model_dump(mode="json", exclude_none=True)
        return {key: value for key, value in dumped.items() if value not in ({}, "", 0)}


class ServeDeployment(_Answer):
    name: str = ""
    status: str = ""
    message: str = ""


class ServeApplication(_Answer):
    status: str = ""
    message: str = ""
    route_prefix: str | None = None
    docs_path: str | None = None
    deployments: dict[str, ServeDeployment] = Field(default_factory=dict)


class ServeDetails(_Answer):
    """``GET /api/serve/applications/?api_type=declarative``."""

    applications: dict[str, ServeApplication] = Field(default_factory=dict)
    deploy_mode: str | None = None
