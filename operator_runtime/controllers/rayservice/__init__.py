"""The RayService controller (``controller.py``): Ray Serve applications on a cluster
that is replaced without downtime when its spec changes."""

from operator_runtime.controllers.rayservice.controller import (
    PERMISSIONS,
    WATCHED,
    RayServiceController,
)
from operator_runtime.controllers.rayservice.options import RayServiceOptions

__all__ = ["PERMISSIONS", "WATCHED", "RayServiceController", "RayServiceOptions"]
