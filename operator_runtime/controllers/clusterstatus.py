"""Whether a RayCluster status changed in a way a reader sees. The RayCluster controller
writes a status only then; the RayJob controller compares the copy of it that it keeps
in ``rayClusterStatus`` the same way."""

from __future__ import annotations

from typing import Final

from operator_runtime.runtime.kinds import Object

_COUNTS: Final = (
    "readyWorkerReplicas",
    "availableWorkerReplicas",
    "desiredWorkerReplicas",
    "minWorkerReplicas",
    "maxWorkerReplicas",
)
_COMPARED: Final = (
    "state",
    "reason",
    *_COUNTS,
    "endpoints",
    "head",
    "conditions",
    "observedGeneration",
    "desiredCPU",
    "desiredMemory",
    "desiredGPU",
    "desiredTPU",
)


def status_changed(old: Object, new: Object) -> bool:
    """Whether a reader would see a difference (``lastUpdateTime`` alone is not one)."""
    return any(old.get(key) != new.get(key) for key in _COMPARED)


def only_counts_changed(old: Object, new: Object) -> bool:
    """Whether the replica counts are all that differ: a pass that comes back at once
    to go on scaling may leave writing them to the pass that ends the scale-up."""
    return all(old.get(key) == new.get(key) for key in _COMPARED if key not in _COUNTS)


def counts_reached(old: Object, new: Object) -> bool:
    """Whether ``new`` is the status in which the ready workers reach the desired count:
    the write that ends a scale-up or down, which whoever watches the counts (``kubectl
    get``, a script waiting for its workers) should see at once, not one interval later."""
    ready = new.get("readyWorkerReplicas")
    return ready == new.get("desiredWorkerReplicas") and ready != old.get("readyWorkerReplicas")
