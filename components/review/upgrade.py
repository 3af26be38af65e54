"""A RayService's move to a new cluster (KubeRay §5.3, §5.4): the new cluster runs beside
the old one until traffic has moved, at once when it serves (``NewCluster``) or in steps
behind a Gateway (``NewClusterWithIncrementalUpgrade``), and the old one goes
``rayClusterDeletionDelaySeconds`` later. The steps are counted with the controller's
own ``capacity_step`` and ``traffic_step`` (``render/rayservice_upgrade.py``).
"""

from __future__ import annotations

from operator_runtime.api import RayCluster, RayService
from operator_runtime.render import incremental_upgrade_enabled
from operator_runtime.render.rayservice_upgrade import capacity_step, deletion_delay, traffic_step

from .changes import ObjectChange
from .ledger import cluster_pods
from .model import Verdict
from .rules import ReviewSettings
from .verdicts import base, swap

__all__ = ["new_cluster_verdict", "traffic_moves"]


def traffic_moves(max_surge: int, step: int) -> int | None:
    """Traffic steps of an incremental upgrade from the old cluster to the new one, as the
    controller takes them: capacity moves (``capacity_step``) wait for the traffic to
    reach the new cluster's capacity, traffic moves (``traffic_step``) one per interval.
    None if it never completes (a surge or a step of 0)."""
    active, pending, weight, moves = 100, 0, 0, 0
    while not (active == 0 and weight == 100):
        if weight == pending:
            gained, lost = capacity_step(pending, active, max_surge)
            if active + pending > 100:
                active, moved = lost, lost != active
            else:
                pending, moved = gained, gained != pending
            if not moved:
                return None
        else:
            following = traffic_step(weight, pending, step)
            if following == weight:
                return None
            weight, moves = following, moves + 1
    return moves


def new_cluster_verdict(
    change: ObjectChange,
    new: RayService,
    old_cluster: RayCluster,
    new_cluster: RayCluster,
    settings: ReviewSettings,
) -> Verdict:
    before = sum(cluster_pods(old_cluster).values())
    after = sum(cluster_pods(new_cluster).values())
    delay = deletion_delay(new)
    effects = [
        f"the cluster spec changes beyond what an update in place applies: a new cluster of "
        f"{after} pod(s) is made beside the running one ({before} pod(s))"
    ]
    side_by_side = delay
    if incremental_upgrade_enabled(new, settings.options.feature_gates):
        options = new.spec.upgrade_strategy.cluster_upgrade_options  # type: ignore[union-attr]
        assert options is not None  # the validator requires them for this type
        surge = 100 if options.max_surge_percent is None else int(options.max_surge_percent)
        moves = traffic_moves(surge, int(options.step_size_percent))
        interval = int(options.interval_seconds)
        effects.append(
            "incremental upgrade through the Gateway: the new cluster starts with its groups' "
            "replicas unset (the autoscaler sizes it from serve target_capacity), capacity "
            f"moves {surge} % at a time and traffic {options.step_size_percent} % every "
            f"{interval} s"
            + (
                f": {moves} traffic step(s), at least {moves * interval} s"
                if moves is not None
                else ": with these steps it never completes"
            )
        )
        effects.append(
            f"together the two serve at most {100 + surge} % of the capacity, so the peak "
            "here (both clusters in full) is an upper bound"
        )
        side_by_side += moves * interval if moves is not None else 0
        summary = f"incremental upgrade: a new cluster of {after} pod(s), traffic moved in steps"
    else:
        effects.append(
            "traffic switches to it once its serve applications are ready; the old cluster "
            f"is deleted {delay} s later (rayClusterDeletionDelaySeconds)"
        )
        summary = f"new cluster: {after} pod(s) beside the old {before} until the switch"
    finding = settings.finding(
        "upgrade-starts-new-cluster",
        change.ref,
        f"a second cluster ({after} pod(s)) runs beside the old one ({before}) for at least "
        f"{side_by_side} s",
    )
    return base(
        change,
        summary=summary,
        effects=tuple(effects),
        peak_seconds=side_by_side,
        findings=(finding,),
        **swap(old_cluster, new_cluster, together=True),
    )
