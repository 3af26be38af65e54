"""The RayJob controller (``controller.py``): a Ray job on a cluster of its own or an
existing one, from submission to cleanup."""

from operator_runtime.controllers.rayjob.controller import (
    PERMISSIONS,
    WATCHED,
    RayJobController,
)
from operator_runtime.controllers.rayjob.options import RayJobOptions

__all__ = ["PERMISSIONS", "WATCHED", "RayJobController", "RayJobOptions"]
