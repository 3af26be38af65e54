"""What the RayService controller does when ``rayClusterConfig`` changes (KubeRay
§5.3, §5.4): the decisions, kept apart from the controller so that anything predicting
them (``python -m pulumi_ray review``) calls the very functions the controller calls.

- ``cluster_update``: a cluster the RayService made runs the goal spec already
  (``none``: the hash leaves out replicas, min/max, ``workersToDelete``, tolerations,
  scheduling gates, the cluster's ``upgradeStrategy`` and ``suspend``), takes it in
  place (``in-place``: the only change is worker groups appended at the end), or needs
  a new cluster (``new-cluster``);
- ``deletion_delay``: how long the old cluster outlives the switch to the new one;
- ``new_cluster_allowed``: whether a needed new cluster is made at all (the
  ``upgradeStrategy`` type, the incremental-upgrade gate, ``ENABLE_ZERO_DOWNTIME``);
- ``capacity_step`` and ``traffic_step``: one move of an incremental upgrade's serve
  ``target_capacity`` and of its HTTPRoute weights.
"""

from __future__ import annotations

from typing import Final, Literal

from operator_runtime.api import FeatureGates, RayCluster, RayClusterSpec, RayService
from operator_runtime.api.rayservice import INCREMENTAL_UPGRADE, RayServiceUpgradeStrategy
from operator_runtime.render.rayservice_cluster import full_hash_matches, partial_hash_matches

__all__ = [
    "DEFAULT_DELETION_DELAY_SECONDS",
    "ClusterUpdate",
    "capacity_step",
    "cluster_update",
    "deletion_delay",
    "new_cluster_allowed",
    "traffic_step",
]

ClusterUpdate = Literal["none", "in-place", "new-cluster"]
DEFAULT_DELETION_DELAY_SECONDS: Final = 60
"""``rayClusterDeletionDelaySeconds`` when unset: an old cluster outlives its switch."""


def deletion_delay(service: RayService) -> int:
    """Seconds a cluster that is no longer active or pending lives on before the
    controller deletes it (none while the RayService itself is being deleted)."""
    delay = service.spec.ray_cluster_deletion_delay_seconds
    return DEFAULT_DELETION_DELAY_SECONDS if delay is None else int(delay)


def cluster_update(existing: RayCluster, goal: RayClusterSpec) -> ClusterUpdate:
    """How ``existing`` (a cluster the RayService made, with the hash and group-count
    annotations it was stamped with) is brought to ``goal``."""
    if full_hash_matches(existing, goal):
        return "none"
    if partial_hash_matches(existing, goal):
        return "in-place"
    return "new-cluster"


def new_cluster_allowed(
    strategy: RayServiceUpgradeStrategy | None, gates: FeatureGates, *, zero_downtime: bool
) -> bool:
    """Whether a changed cluster spec gets a new cluster (otherwise nothing happens to
    the running one): ``NewCluster`` yes, ``NewClusterWithIncrementalUpgrade`` only with
    the RayServiceIncrementalUpgrade gate on, ``None`` (or any other type) no; no type at
    all follows ``ENABLE_ZERO_DOWNTIME`` (``zero_downtime``)."""
    if strategy is not None and strategy.type is not None:
        allowed: set[str] = {"NewCluster"}
        if gates.ray_service_incremental_upgrade:
            allowed.add(INCREMENTAL_UPGRADE)
        return strategy.type in allowed
    return zero_downtime


def capacity_step(gaining: int, losing: int, surge: int) -> tuple[int, int]:
    """One ``maxSurgePercent`` move of serve ``target_capacity`` toward the side that
    gains (the pending cluster in an upgrade, the active one in a rollback): while both
    sides together hold more than 100 %, the losing side gives ``surge`` up; otherwise the
    gaining side takes ``surge`` more. Returns (gaining, losing)."""
    if gaining + losing > 100:
        return gaining, max(0, losing - surge)
    return min(100, gaining + surge), losing


def traffic_step(weight: int, capacity: int, step: int) -> int:
    """The gaining side's HTTPRoute weight after one ``stepSizePercent`` move: never
    above 100, nor above that side's ``target_capacity``."""
    return min(100, weight + step, capacity)
