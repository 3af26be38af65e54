"""What can go wrong when the operator talks to a Ray head.

    DashboardError                 any answer we cannot use (the base: catch this to retry)
     +-- DashboardUnavailable      no answer: refused, reset, timed out, or a 502/503/504
     +-- DashboardNotFound         404: no such job (or, through the API server's proxy,
     |                             no such service)
     +-- DuplicateSubmission       the submission id is already taken on this head

The controllers branch on these by name: a RayJob in HTTPMode submits its job when the
info call raises ``DashboardNotFound``, treats ``DuplicateSubmission`` as "already
submitted", and starts its status-check failure timer on ``DashboardUnavailable``.
"""

from __future__ import annotations

__all__ = [
    "DashboardError",
    "DashboardNotFound",
    "DashboardUnavailable",
    "DuplicateSubmission",
]


class DashboardError(Exception):
    """A call to the Ray dashboard (or the serve proxy) did not give a usable answer."""

    def __init__(self, message: str, *, url: str, status_code: int | None = None) -> None:
        super().__init__(message)
        self.url = url
        self.status_code = status_code
        """The HTTP status, or None when no answer came at all."""


class DashboardUnavailable(DashboardError):
    """Nothing answered in time: the head is starting, gone, or unreachable."""


class DashboardNotFound(DashboardError):
    """The dashboard answered 404."""


class DuplicateSubmission(DashboardError):
    """A job with this submission id already exists on the head."""
