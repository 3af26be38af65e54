"""The ``Recreate`` upgrade strategy: replace every pod when the pod-shaping spec changes.

The head pod carries, from its creation, a hash of the spec (``render.recreate``) and
the operator version that computed it. A hash that differs from the spec's current
hash means the user changed something pods are built from: all pods go, and are
rebuilt. What does not shape pods is left out of the hash: replica counts and
``workersToDelete`` (the autoscaler changes them all the time), tolerations and
scheduling gates (Kueue adds them after creation) and the strategy itself.

A different operator version may hash the same spec differently, so when the head
pod was stamped by another version the stamps are only rewritten: upgrading the
operator must never restart every Ray cluster.
"""

from __future__ import annotations

from enum import Enum

from operator_runtime.api import JSONObject
from operator_runtime.api.annotations import AnnotationKey
from operator_runtime.render.recreate import recreate_requested, spec_hash
from operator_runtime.runtime.kinds import Object

__all__ = ["Decision", "decide", "recreate_requested", "restamp_patch", "spec_hash", "stamp"]


def stamp(annotations: JSONObject, *, spec_hash_value: str, operator_version: str) -> None:
    """Put the hash and version stamps on a head pod being created."""
    annotations[AnnotationKey.UPGRADE_STRATEGY_RECREATE_HASH.value] = spec_hash_value
    annotations[AnnotationKey.KUBERAY_VERSION.value] = operator_version


class Decision(Enum):
    KEEP = "keep"
    RESTAMP = "restamp"
    """The head pod was stamped by another operator version: rewrite the stamps only."""
    RECREATE = "recreate"


def decide(head_pods: list[Object], *, expected_hash: str, operator_version: str) -> Decision:
    """What the Recreate strategy does with the current pods (called only when the
    strategy is ``Recreate``)."""
    if not head_pods:
        return Decision.KEEP
    annotations = head_pods[0]["metadata"].get("annotations") or {}
    pod_version = str(annotations.get(AnnotationKey.KUBERAY_VERSION, ""))
    if pod_version and pod_version != operator_version:
        return Decision.RESTAMP
    actual = str(annotations.get(AnnotationKey.UPGRADE_STRATEGY_RECREATE_HASH, ""))
    return Decision.RECREATE if actual and actual != expected_hash else Decision.KEEP


def restamp_patch(*, spec_hash_value: str, operator_version: str) -> Object:
    annotations: JSONObject = {}
    stamp(annotations, spec_hash_value=spec_hash_value, operator_version=operator_version)
    return {"metadata": {"annotations": annotations}}
