"""The pod-shaping hash of a RayCluster spec, which the ``Recreate`` upgrade strategy
compares with the one stamped on the head pod at its creation.

What does not shape pods is left out of the hash: replica counts and
``workersToDelete`` (the autoscaler changes them all the time), tolerations and
scheduling gates (Kueue adds them after creation) and the strategy itself. It lives in
render, not in the controller, so that anything predicting what the controller will do
(``python -m pulumi_ray review``) calls the very function the controller calls.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any, Final

from operator_runtime.api import RayClusterSpec

__all__ = ["POD_SPEC_IGNORED", "WORKER_GROUP_IGNORED", "recreate_requested", "spec_hash"]

POD_SPEC_IGNORED: Final = ("tolerations", "schedulingGates")
WORKER_GROUP_IGNORED: Final = ("replicas", "minReplicas", "maxReplicas")


def spec_hash(spec: RayClusterSpec) -> str:
    """SHA-1 of the canonical JSON of the pod-shaping spec, base32 (extended hex)."""
    wire: dict[str, Any] = dict(spec.to_dict())
    wire.pop("upgradeStrategy", None)
    _drop_pod_fields(wire.get("headGroupSpec"))
    for group in wire.get("workerGroupSpecs") or ():
        if not isinstance(group, dict):
            continue
        for key in WORKER_GROUP_IGNORED:
            group.pop(key, None)
        strategy = group.get("scaleStrategy")
        if isinstance(strategy, dict):
            strategy.pop("workersToDelete", None)
            if not strategy:
                # Go keeps an empty struct; absent and empty must hash alike.
                del group["scaleStrategy"]
        _drop_pod_fields(group)
    canonical = json.dumps(wire, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    digest = hashlib.sha1(canonical.encode(), usedforsecurity=False).digest()
    return base64.b32hexencode(digest).decode()


def _drop_pod_fields(group: object) -> None:
    if not isinstance(group, dict):
        return
    template = group.get("template")
    pod_spec = template.get("spec") if isinstance(template, dict) else None
    if isinstance(pod_spec, dict):
        for key in POD_SPEC_IGNORED:
            pod_spec.pop(key, None)


def recreate_requested(spec: RayClusterSpec) -> bool:
    """Whether the cluster asks for the ``Recreate`` upgrade strategy."""
    strategy = spec.upgrade_strategy
    return strategy is not None and strategy.type == "Recreate"
