"""Finalizers the operator puts on its custom resources."""

from __future__ import annotations

from enum import StrEnum


class Finalizer(StrEnum):
    """Each blocks deletion until the operator has cleaned up outside the cluster."""

    GCS_FT_REDIS_CLEANUP = "ray.io/gcs-ft-redis-cleanup-finalizer"
    RAYJOB = "ray.io/rayjob-finalizer"
    RAYSERVICE = "ray.io/rayservice-finalizer"
