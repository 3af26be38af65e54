"""What the controllers read off a pod the same way."""

from __future__ import annotations

from operator_runtime.runtime.kinds import Object


def pod_ready(pod: Object) -> bool:
    """The pod's Ready condition is True (no condition yet: not ready)."""
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return False
