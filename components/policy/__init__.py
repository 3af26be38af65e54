"""A CrossGuard policy pack for Ray objects from any source (``policy/`` is the pack).

``rules`` holds the checks as pure functions of a wire-form document; ``pack`` (imported
only by the pack itself, it needs ``pulumi_policy``) turns them into policies.
"""

from .rules import (
    PodTemplate,
    PolicyCode,
    api_lines,
    delete_self_lines,
    gpu_lines,
    image_lines,
    limit_lines,
    pod_templates,
)

__all__ = [
    "PodTemplate",
    "PolicyCode",
    "api_lines",
    "delete_self_lines",
    "gpu_lines",
    "image_lines",
    "limit_lines",
    "pod_templates",
]
