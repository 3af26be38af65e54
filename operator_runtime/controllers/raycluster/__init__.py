"""The RayCluster controller (KubeRay v1.7 semantics): see ``controller.py``."""

from operator_runtime.controllers.raycluster.controller import (
    GATE_STEPS,
    PERMISSIONS,
    RESOURCE_STEPS,
    RayClusterController,
)
from operator_runtime.controllers.raycluster.options import RayClusterOptions

__all__ = [
    "GATE_STEPS",
    "PERMISSIONS",
    "RESOURCE_STEPS",
    "RayClusterController",
    "RayClusterOptions",
]
