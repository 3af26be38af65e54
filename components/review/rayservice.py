"""What the RayService controller does with a change to a RayService.

The controller's own functions decide (``render/rayservice_upgrade.py``,
``render/rayservice_cluster.py``); the clusters are built as the controller builds
them (``build_rayservice_cluster``) and counted by ``ledger``:

- ``rayClusterConfig`` hashes as before (only replicas, min/max, ``workersToDelete``,
  tolerations, scheduling gates or the cluster's ``suspend`` changed): nothing reaches
  the running cluster (KubeRay §5.3: the hash leaves them out);
- worker groups appended at the end: the running cluster is updated in place, and the
  RayCluster controller creates the new groups' pods (judged as a RayCluster update);
- any other cluster change: a new cluster, if the strategy allows one
  (``new_cluster_allowed``): beside the old one until it serves, then the old one goes
  ``rayClusterDeletionDelaySeconds`` later; with ``NewClusterWithIncrementalUpgrade``
  traffic moves in steps (``capacity_step``, ``traffic_step``); with ``None`` (or
  ``ENABLE_ZERO_DOWNTIME=false`` and no strategy) nothing happens;
- ``serveConfigV2`` alone: the applications are redeployed on the running cluster (a PUT
  to its dashboard), no pod changes;
- ``spec.suspend``: every cluster deleted; resuming makes a new one.

The cluster running before the change is taken to be the one the old spec makes.
"""

from __future__ import annotations

import dataclasses
from typing import Final

from operator_runtime.api import RayCluster, RayService
from operator_runtime.render import build_rayservice_cluster, incremental_upgrade_enabled
from operator_runtime.render.rayservice_upgrade import (
    capacity_step,
    cluster_update,
    deletion_delay,
    new_cluster_allowed,
    traffic_step,
)

from .changes import ObjectChange, changed_paths
from .ledger import cluster_pods, cluster_resources
from .model import Finding, Resources, Verdict, add_resources
from .raycluster import cluster_deleted, cluster_replaced, raycluster_verdict
from .rules import ReviewSettings
from .verdicts import base, judge, ledger, spec_uncertain, swap

__all__ = ["rayservice_verdict", "traffic_moves"]

SUFFIX: Final = "xxxxx"
"""Stands in for the five random characters of a RayService's cluster name."""
_CLUSTER: Final = "spec.rayClusterConfig"
_SERVE: Final = "spec.serveConfigV2"


def service_cluster(service: RayService, settings: ReviewSettings) -> RayCluster:
    """The RayCluster the controller makes for ``service``."""
    document = build_rayservice_cluster(
        service=service,
        cluster_name=f"{service.metadata.name}-{SUFFIX}",
        options=settings.options,
    )
    return RayCluster.model_validate(document)


def rayservice_verdict(change: ObjectChange, settings: ReviewSettings) -> Verdict:
    return judge(
        change,
        settings,
        RayService,
        created=_created,
        deleted=_deleted,
        replaced=_replaced,
        updated=_updated,
        cluster_after=_running,
        cluster_spec=("spec", "rayClusterConfig"),
    )


def _pods(cluster: RayCluster | None) -> int:
    return sum(cluster_pods(cluster).values()) if cluster is not None else 0


def _resources(cluster: RayCluster | None) -> Resources:
    return cluster_resources(cluster) if cluster is not None else add_resources()


def _running(service: RayService, settings: ReviewSettings) -> RayCluster | None:
    return None if service.spec.suspend else service_cluster(service, settings)


def _created(change: ObjectChange, new: RayService, settings: ReviewSettings) -> Verdict:
    cluster = _running(new, settings)
    pods, resources = _pods(cluster), _resources(cluster)
    summary = (
        "created suspended: no cluster"
        if cluster is None
        else f"created: a cluster of {pods} pod(s); the serve config is deployed once its "
        "head is ready"
    )
    return base(change, summary=summary, **ledger(pods_after=pods, created=pods, after=resources))


def _deleted(change: ObjectChange, old: RayService, settings: ReviewSettings) -> Verdict:
    cluster = _running(old, settings)
    if cluster is None:
        return base(change, summary="deleted: suspended, it has no cluster")
    verdict = cluster_deleted(change, cluster, settings)
    effect = (
        "its clusters (the active one, and a pending one mid-upgrade) are deleted at once, "
        "without rayClusterDeletionDelaySeconds; the RayService goes when none remains"
    )
    return dataclasses.replace(verdict, effects=(effect, *verdict.effects))


def _replaced(
    change: ObjectChange, old: RayService, new: RayService, settings: ReviewSettings
) -> Verdict:
    old_cluster, new_cluster = _running(old, settings), _running(new, settings)
    if old_cluster is None or new_cluster is None:
        return _suspend(change, old_cluster, new_cluster, settings)
    return cluster_replaced(change, old_cluster, new_cluster, settings)


def _updated(
    change: ObjectChange, old: RayService, new: RayService, settings: ReviewSettings
) -> Verdict:
    old_cluster, new_cluster = _running(old, settings), _running(new, settings)
    if old_cluster is None or new_cluster is None:
        verdict = _suspend(change, old_cluster, new_cluster, settings)
    else:
        decision = cluster_update(old_cluster, new.spec.ray_cluster_config)
        if decision == "none":
            verdict = _unchanged_cluster(change, old_cluster, settings)
        elif decision == "in-place":
            verdict = _in_place(change, old_cluster, new_cluster, settings)
        elif not new_cluster_allowed(
            new.spec.upgrade_strategy,
            settings.options.feature_gates,
            zero_downtime=settings.zero_downtime,
        ):
            verdict = _not_applied(change, new, old_cluster, settings)
        else:
            verdict = _new_cluster(change, new, old_cluster, new_cluster, settings)
    return _with_uncertain(_with_serve(verdict, change), change, settings)


def _suspend(
    change: ObjectChange,
    old: RayCluster | None,
    new: RayCluster | None,
    settings: ReviewSettings,
) -> Verdict:
    before, after = _pods(old), _pods(new)
    findings: tuple[Finding, ...] = ()
    if old is None and new is None:
        summary = "suspended: no cluster; the change applies when it resumes"
        effects: tuple[str, ...] = ()
    elif new is None:
        summary = f"suspended: its cluster(s) deleted, {before} pod(s) go"
        effects = (
            "spec.suspend: every cluster, the serve Services and (incremental) the Gateway "
            "and HTTPRoute are deleted; it serves nothing until resumed",
        )
        findings = (
            settings.finding(
                "suspend-deletes-pods", change.ref, f"suspend deletes {before} pod(s)"
            ),
        )
    else:
        summary = f"resumed: a new cluster of {after} pod(s)"
        effects = ("resumed: a new cluster is made from the current spec",)
    return base(
        change,
        summary=summary,
        effects=effects,
        findings=findings,
        **swap(old, new),
    )


def _kept(change: ObjectChange, cluster: RayCluster, **fields: object) -> Verdict:
    pods, resources = _pods(cluster), _resources(cluster)
    kept = ledger(pods_before=pods, pods_after=pods, before=resources, after=resources)
    return base(change, **kept, **fields)


def _cluster_paths(change: ObjectChange) -> list[str]:
    return [p for p in change.changed if p.startswith(_CLUSTER)]


def _unchanged_cluster(
    change: ObjectChange, cluster: RayCluster, settings: ReviewSettings
) -> Verdict:
    ignored = _cluster_paths(change)
    if not ignored:
        return _kept(change, cluster, summary="no cluster change")
    finding = settings.finding(
        "change-not-applied",
        change.ref,
        "not applied to the running cluster: " + ", ".join(ignored),
    )
    return _kept(
        change,
        cluster,
        summary="cluster change not applied: the running cluster keeps its spec",
        effects=(
            "left out of the cluster hash (replicas, min/max, workersToDelete, tolerations, "
            "scheduling gates, the cluster's upgradeStrategy and suspend), so neither a new "
            "cluster nor an update: " + ", ".join(ignored),
        ),
        findings=(finding,),
    )


def _in_place(
    change: ObjectChange, old: RayCluster, new: RayCluster, settings: ReviewSettings
) -> Verdict:
    """The controller writes the goal spec onto the running cluster, keeping its
    ``suspend``: judged as that RayCluster update."""
    before = old.to_dict()
    kept = new.model_copy(
        update={"spec": new.spec.model_copy(update={"suspend": old.spec.suspend})}
    )
    after = kept.to_dict()
    inner = raycluster_verdict(
        ObjectChange(
            kind="RayCluster",
            namespace=change.namespace,
            name=old.metadata.name or "",
            op="update",
            before=before,
            after=after,
            changed=tuple(changed_paths(before, after)),
        ),
        settings,
    )
    return dataclasses.replace(
        inner,
        kind=change.kind,
        name=change.name,
        op=change.op,
        changed=change.changed,
        origin=change.origin,
        summary="worker group(s) appended: the running cluster is updated in place; "
        + inner.summary,
        effects=(
            "only worker groups appended at the end change the cluster hash: the running "
            "cluster takes the new spec in place, no new cluster",
            *(f"its cluster: {effect}" for effect in inner.effects),
        ),
        findings=tuple(dataclasses.replace(f, ref=change.ref) for f in inner.findings),
        lowest={},
        highest={},
    )


def _not_applied(
    change: ObjectChange, new: RayService, cluster: RayCluster, settings: ReviewSettings
) -> Verdict:
    strategy = new.spec.upgrade_strategy
    kind = strategy.type if strategy is not None and strategy.type is not None else None
    why = (
        f"upgradeStrategy {kind}"
        if kind is not None
        else "no upgradeStrategy and the operator runs with ENABLE_ZERO_DOWNTIME=false"
    )
    if kind == "NewClusterWithIncrementalUpgrade":
        why += " with the RayServiceIncrementalUpgrade gate off"
    finding = settings.finding(
        "change-not-applied", change.ref, f"cluster change not applied ({why})"
    )
    return _kept(
        change,
        cluster,
        summary=f"cluster change not applied ({why})",
        effects=(
            f"the cluster spec needs a new cluster, but {why}: no new cluster is made and "
            "the running one is not updated; it keeps the old spec (a cluster made later, "
            "after a suspend and resume, gets the new one)",
        ),
        findings=(finding,),
    )


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


def _new_cluster(
    change: ObjectChange,
    new: RayService,
    old_cluster: RayCluster,
    new_cluster: RayCluster,
    settings: ReviewSettings,
) -> Verdict:
    before, after = _pods(old_cluster), _pods(new_cluster)
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


def _with_serve(verdict: Verdict, change: ObjectChange) -> Verdict:
    """What a ``serveConfigV2`` change does, and the fields that change no pod."""
    effects = list(verdict.effects)
    if any(p.startswith(_SERVE) for p in change.changed):
        if verdict.peak_seconds is not None:
            effects.append("the new serve config is deployed on the new cluster only")
        elif verdict.pods_after:
            effects.append(
                "serveConfigV2: the applications are redeployed in place on the running "
                "cluster (a PUT to its dashboard), no pod changes"
            )
        if verdict.summary in ("no cluster change",):
            verdict = dataclasses.replace(verdict, summary="serve config redeployed in place")
    other = [
        p
        for p in change.changed
        if p.startswith("spec.") and not p.startswith((_CLUSTER, _SERVE, "spec.suspend"))
    ]
    if other:
        effects.append("no pod changes for: " + ", ".join(other))
    return dataclasses.replace(verdict, effects=tuple(effects))


def _with_uncertain(verdict: Verdict, change: ObjectChange, settings: ReviewSettings) -> Verdict:
    uncertain = spec_uncertain(change)
    if not uncertain:
        return verdict
    finding = settings.finding("known-at-deploy", change.ref, "spec: " + ", ".join(uncertain))
    return dataclasses.replace(
        verdict,
        effects=(
            *verdict.effects,
            "a value is known at deploy (or is a secret the engine says changed): "
            + ", ".join(uncertain)
            + "; the verdict compares the specs as written",
        ),
        findings=(*verdict.findings, finding),
        known_at_deploy=True,
    )
