"""Whether a program runs offline, under ``python -m pulumi_ray render`` or ``review``.

Those run a program to read the ray.io/v1 objects it declares and render what the
operator creates for them; nothing is deployed, so the program runs as a reviewer has it
(a checkout, often without its stack's config). A setting only the operator's own
Deployment uses is then not needed: a ``RayOperator`` without ``image`` (the stack config
a quickstart reads it from, unset) gets ``OPERATOR_IMAGE_STAND_IN`` instead of stopping
the run, since no rendered object depends on the operator's image. A preview or an
update, where the Deployment is real, still refuses it.

A context variable, set by the offline runner in the context it runs the program in, so
it is never left set for code outside that run.
"""

from contextvars import ContextVar
from typing import Final

__all__ = ["OFFLINE", "OPERATOR_IMAGE_STAND_IN"]

OFFLINE: Final[ContextVar[bool]] = ContextVar("pulumi_ray_offline", default=False)
"""True while ``components._program`` runs a program under mocks."""

OPERATOR_IMAGE_STAND_IN: Final = "registry.invalid/pulumi-ray/operator:not-needed-offline"
"""The operator's image offline when none is given: a valid reference no registry serves."""
