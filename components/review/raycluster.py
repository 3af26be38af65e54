"""What the RayCluster controller does with a change to a RayCluster.

Every answer comes from the functions the controller's pod step calls
(``controllers/raycluster/pods.py``), not from a table of its own:

- the pods a spec asks for: the head (none while ``spec.suspend``) and, per worker
  group, ``desired_worker_replicas`` x ``numOfHosts`` (0 for a suspended group);
- whether running pods are replaced: only with ``upgradeStrategy: Recreate`` and a
  different ``spec_hash`` (``render.recreate``), which leaves replicas, min/max,
  ``workersToDelete``, tolerations and scheduling gates out. Without Recreate a template
  change reaches only pods created later (KubeRay #3840, #3905);
- a scale-down without the autoscaler deletes the surplus; with it (and without
  ``ENABLE_RANDOM_POD_DELETE``) the autoscaler chooses, and the operator deletes none;
- the pods of a worker group no longer in the spec are not touched: the controller
  only walks the spec's groups, so they run until the cluster goes;
- resources as ``status.desired*`` counts them (``desired_amounts``): the head plus each
  non-suspended group's pod x ``replicas`` as written x hosts.

The pods running before the change are taken to be what the old spec asks for; an
autoscaled group may hold more or fewer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from operator_runtime.api import (
    InvalidObjectError,
    RayCluster,
    RayClusterSpec,
    WorkerGroupSpec,
    load_object,
)
from operator_runtime.render import desired_worker_replicas
from operator_runtime.render.gcsft import deletion_timeout, redis_cleanup_needed
from operator_runtime.render.recreate import (
    POD_SPEC_IGNORED,
    WORKER_GROUP_IGNORED,
    recreate_requested,
    spec_hash,
)
from operator_runtime.render.resources import (
    Amount,
    desired_amounts,
    pod_resources,
    sum_resources,
    summary_amounts,
    worker_resources,
)

from .changes import ObjectChange
from .model import Finding, Verdict, add_resources, peak_resources
from .rules import ReviewSettings

__all__ = ["autoscaler_bounds", "cluster_pods", "cluster_resources", "raycluster_verdict"]

HEAD = "head"
_IGNORED_LEAVES = frozenset(POD_SPEC_IGNORED + WORKER_GROUP_IGNORED + ("workersToDelete",))
_SAID_PER_GROUP = frozenset({"replicas"})
"""Ignored fields whose effect the worker-group lines already give."""


def cluster_pods(cluster: RayCluster) -> dict[str, int]:
    """Pods the controller keeps for ``cluster``, by group (``head`` for the head)."""
    if cluster.spec.suspend:
        return {}
    pods = {HEAD: 1}
    for group in cluster.spec.worker_group_specs or ():
        pods[group.group_name] = desired_worker_replicas(group) * group.num_of_hosts
    return pods


def cluster_resources(cluster: RayCluster) -> dict[str, Amount]:
    """``status.desired*`` as amounts; nothing while the whole cluster is suspended
    (it then has no pods, whatever its groups say)."""
    if cluster.spec.suspend:
        return add_resources()
    return desired_amounts(cluster)


def autoscaler_bounds(cluster: RayCluster) -> tuple[dict[str, Amount], dict[str, Amount]]:
    """What an autoscaled cluster requests at its groups' minimum (KubeRay's
    CalculateMinResources, which the gang schedulers reserve) and at their maximum (the
    head plus each group's pod x ``maxReplicas`` x hosts; KubeRay counts no such sum, the
    review adds it for the upper bound). Both empty without the autoscaler."""
    if not cluster.spec.enable_in_tree_autoscaling or cluster.spec.suspend:
        return {}, {}
    lowest = summary_amounts(worker_resources(cluster, minimum=True))
    parts = [pod_resources(cluster.spec.head_group_spec.template)]
    for group in cluster.spec.worker_group_specs or ():
        if group.suspend or group.max_replicas is None:
            continue
        count = group.max_replicas * group.num_of_hosts
        parts.append({k: v.times(count) for k, v in pod_resources(group.template).items()})
    return lowest, summary_amounts(sum_resources(parts))


def _groups_without_replicas(document: Mapping[str, object] | None) -> list[str]:
    """Groups the document gives no ``replicas`` (the model defaults it to 0, as the CRD
    does, so only the document tells)."""
    spec = (document or {}).get("spec")
    groups = spec.get("workerGroupSpecs") if isinstance(spec, dict) else None
    if not isinstance(groups, list):
        return []
    return [
        str(group.get("groupName"))
        for group in groups
        if isinstance(group, dict) and "replicas" not in group
    ]


def _load(document: Mapping[str, object] | None, settings: ReviewSettings) -> RayCluster:
    obj = load_object(dict(document or {}), settings.options.feature_gates)
    assert isinstance(obj, RayCluster)
    return obj


def raycluster_verdict(change: ObjectChange, settings: ReviewSettings) -> Verdict:
    try:
        old = _load(change.before, settings) if change.before is not None else None
        new = _load(change.after, settings) if change.after is not None else None
    except InvalidObjectError as error:
        return _invalid(change, settings, str(error))
    if old is None and new is not None:
        verdict = _created(change, new)
    elif new is None and old is not None:
        return _deleted(change, old, settings)
    else:
        assert old is not None and new is not None
        if change.op == "replace":
            verdict = _replaced(change, old, new, settings)
        else:
            verdict = _updated(change, old, new, settings)
    lowest, highest = autoscaler_bounds(new)
    effects = verdict.effects
    unset = _groups_without_replicas(change.after)
    if new.spec.enable_in_tree_autoscaling and unset:
        effects += (
            f"the autoscaler owns the replicas of {', '.join(unset)} (not in the spec): the "
            "counts here start them at minReplicas; the running count is the autoscaler's",
        )
    return dataclasses.replace(verdict, lowest=lowest, highest=highest, effects=effects)


def _base(change: ObjectChange, **fields: object) -> Verdict:
    return Verdict(
        kind=change.kind,
        namespace=change.namespace,
        name=change.name,
        op=change.op,
        changed=change.changed,
        origin=change.origin,
        **fields,  # type: ignore[arg-type]
    )


def _invalid(change: ObjectChange, settings: ReviewSettings, message: str) -> Verdict:
    if change.unknown or change.secret:
        finding = settings.finding(
            "known-at-deploy",
            change.ref,
            "not checked: it holds values known only at deploy or secret, which may be why "
            "it does not parse",
        )
        return _base(change, summary="known at deploy", findings=(finding,), known_at_deploy=True)
    finding = settings.finding("invalid-object", change.ref, message)
    return _base(change, summary="refused by the operator", findings=(finding,))


def _created(change: ObjectChange, new: RayCluster) -> Verdict:
    pods = cluster_pods(new)
    resources = cluster_resources(new)
    workers = sum(pods.values()) - pods.get(HEAD, 0)
    summary = (
        "created suspended: no pods"
        if new.spec.suspend
        else f"created: a head and {workers} worker pod(s)"
    )
    return _base(
        change,
        summary=summary,
        pods_after=sum(pods.values()),
        pods_created=sum(pods.values()),
        peak_pods=sum(pods.values()),
        after=resources,
        peak=resources,
    )


def _deleted(change: ObjectChange, old: RayCluster, settings: ReviewSettings) -> Verdict:
    pods = sum(cluster_pods(old).values())
    resources = cluster_resources(old)
    effects = [f"every pod ({pods}) is deleted with the cluster"]
    findings = []
    if pods:
        findings.append(settings.finding("cluster-deleted", change.ref, f"deletes {pods} pod(s)"))
    if redis_cleanup_needed(old, cleanup_enabled=settings.gcs_ft_redis_cleanup):
        timeout = deletion_timeout(old.metadata.annotations or {})
        effects.append(
            "GCS fault tolerance: the deletion waits for the Redis cleanup Job, at most "
            f"{timeout:g} s (ray.io/gcs-ft-deletion-timeout) before the finalizer is forced off"
        )
        findings.append(
            settings.finding(
                "gcs-ft-deletion-waits",
                change.ref,
                f"deletion waits up to {timeout:g} s for the Redis cleanup Job",
            )
        )
    return _base(
        change,
        summary=f"deleted: {pods} pod(s) go",
        effects=tuple(effects),
        pods_before=pods,
        pods_deleted=pods,
        peak_pods=pods,
        before=resources,
        peak=resources,
        findings=tuple(findings),
    )


def _replaced(
    change: ObjectChange, old: RayCluster, new: RayCluster, settings: ReviewSettings
) -> Verdict:
    before, after = sum(cluster_pods(old).values()), sum(cluster_pods(new).values())
    res_before, res_after = cluster_resources(old), cluster_resources(new)
    side_by_side = change.create_before_delete
    reasons = ", ".join(change.replace_reasons) or "a field that cannot change in place"
    effects = [
        f"Pulumi replaces the object ({reasons}): the old cluster's {before} pod(s) are "
        f"deleted and {after} created",
        "the new cluster exists before the old one is deleted"
        if side_by_side
        else "the old cluster is deleted first",
    ]
    finding = settings.finding(
        "replaced-restarts-cluster",
        change.ref,
        f"replaced ({reasons}): every pod is recreated",
    )
    return _base(
        change,
        summary=f"replaced: {before} pod(s) deleted, {after} created",
        effects=tuple(effects),
        pods_before=before,
        pods_after=after,
        pods_created=after,
        pods_deleted=before,
        peak_pods=before + after if side_by_side else max(before, after),
        before=res_before,
        after=res_after,
        peak=add_resources(res_before, res_after)
        if side_by_side
        else peak_resources(res_before, res_after),
        findings=(finding,),
    )


def _updated(
    change: ObjectChange, old: RayCluster, new: RayCluster, settings: ReviewSettings
) -> Verdict:
    olds, news = cluster_pods(old), cluster_pods(new)
    before, after = sum(olds.values()), sum(news.values())
    effects: list[str] = []
    findings: list[Finding] = []
    created = deleted = 0
    orphans: dict[str, Amount] = {}
    uncertain = _spec_uncertain(change)
    hash_changed = spec_hash(old.spec) != spec_hash(new.spec)
    reshaped = _reshaped_parts(old, new)
    pods_reshaped = bool(reshaped)
    if new.spec.suspend or old.spec.suspend:
        created, deleted = after, before
        if new.spec.suspend and not old.spec.suspend:
            effects.append(f"suspend: every pod ({before}) is deleted")
            findings.append(
                settings.finding("suspend-deletes-pods", change.ref, f"deletes {before} pod(s)")
            )
        elif old.spec.suspend and not new.spec.suspend:
            effects.append(f"resumed: {after} pod(s) are created")
    elif hash_changed and recreate_requested(new.spec):
        created, deleted = after, before
        effects.append(
            f"upgradeStrategy Recreate and a change the pod hash covers (templates, groups "
            f"added or removed, a group's suspend): every pod ({before}) is deleted, then "
            f"{after} created from the new spec"
        )
        findings.append(
            settings.finding(
                "recreate-restarts-cluster",
                change.ref,
                f"every pod ({before}) is deleted and recreated",
            )
        )
    else:
        created, deleted, orphans = _groups(
            change, old, new, olds, news, effects, findings, settings
        )
        if pods_reshaped:
            effects.append(
                f"the pods of {' and '.join(reshaped)} would be built differently, but "
                "running pods are not replaced (no Recreate strategy): only pods created "
                "from now on get the change"
            )
            findings.append(
                settings.finding(
                    "template-not-rolled",
                    change.ref,
                    f"running pods of {' and '.join(reshaped)} keep the old template",
                )
            )
    ignored = sorted(
        {p for p in change.changed if _segments(p) & (_IGNORED_LEAVES - _SAID_PER_GROUP)}
    )
    if not hash_changed and ignored:
        effects.append("left out of the pod hash, so no pod is replaced for: " + ", ".join(ignored))
    if uncertain:
        effects.append(
            "a pod-shaping value is known at deploy (or is a secret the engine says changed): "
            + ", ".join(uncertain)
            + "; the pod-template verdict assumes it differs"
        )
        findings.append(
            settings.finding("known-at-deploy", change.ref, "pod template: " + ", ".join(uncertain))
        )
    res_before, res_after = cluster_resources(old), cluster_resources(new)
    kept_running = sum(olds[g] for g in olds if g != HEAD and g not in news) if orphans else 0
    if orphans:
        res_after = add_resources(res_after, orphans)
        after += kept_running
    return _base(
        change,
        summary=_summary(created, deleted, pods_reshaped, recreate_requested(new.spec))
        + (f"; {kept_running} pod(s) of removed groups keep running" if kept_running else "")
        + ("; part of the pod template is known at deploy" if uncertain else ""),
        effects=tuple(effects),
        pods_before=before,
        pods_after=after,
        pods_created=created,
        pods_deleted=deleted,
        # Deletes come first in the pod step, but a scale-up in one group beside a
        # scale-down in another can briefly hold both.
        peak_pods=max(before, after, before - deleted + created),
        before=res_before,
        after=res_after,
        peak=peak_resources(res_before, res_after),
        findings=tuple(findings),
        known_at_deploy=bool(uncertain),
    )


def _reshaped_parts(old: RayCluster, new: RayCluster) -> list[str]:
    """Which running pods would be built differently: the head, and each group in both
    specs, each judged by ``spec_hash`` of both specs cut down to that part (a group
    added, removed or suspended changes the Recreate hash, not how other pods are built)."""
    old_groups = {g.group_name: g for g in old.spec.worker_group_specs or ()}
    new_groups = {g.group_name: g for g in new.spec.worker_group_specs or ()}
    parts = []
    if _cut_differs(old, new, None):
        parts.append("the head")
    for name in old_groups:
        if name in new_groups and _cut_differs(old, new, name):
            parts.append(f"worker group {name}")
    return parts


def _cut_differs(old: RayCluster, new: RayCluster, group: str | None) -> bool:
    """``spec_hash`` of both specs with only ``group`` (None: the head, no group), the
    head of the old spec when a group is judged, and the old ``suspend`` values."""

    def cut(cluster: RayCluster, suspend_from: RayCluster) -> RayClusterSpec:
        kept = [
            g.model_copy(update={"suspend": _group(suspend_from, g.group_name).suspend})
            for g in cluster.spec.worker_group_specs or ()
            if g.group_name == group
        ]
        update: dict[str, object] = {"suspend": old.spec.suspend, "worker_group_specs": kept}
        if group is not None:
            update["head_group_spec"] = old.spec.head_group_spec
        return cluster.spec.model_copy(update=update)

    return spec_hash(cut(old, old)) != spec_hash(cut(new, old))


def _group(cluster: RayCluster, name: str) -> WorkerGroupSpec:
    return next(g for g in cluster.spec.worker_group_specs or () if g.group_name == name)


def _groups(
    change: ObjectChange,
    old: RayCluster,
    new: RayCluster,
    olds: Mapping[str, int],
    news: Mapping[str, int],
    effects: list[str],
    findings: list[Finding],
    settings: ReviewSettings,
) -> tuple[int, int, dict[str, Amount]]:
    """Pods created and deleted per worker group, and what the pods of removed groups
    (still running) hold."""
    created = deleted = 0
    orphans: list[dict[str, Amount]] = []
    old_groups = {g.group_name: g for g in old.spec.worker_group_specs or ()}
    new_groups = {g.group_name: g for g in new.spec.worker_group_specs or ()}
    autoscaled = bool(new.spec.enable_in_tree_autoscaling) and not settings.random_pod_delete
    for name in sorted(set(old_groups) - set(new_groups)):
        effects.append(
            f"worker group {name} is removed, but its {olds[name]} pod(s) keep running "
            "until the cluster is deleted"
        )
        findings.append(
            settings.finding(
                "removed-group-pods-remain",
                change.ref,
                f"worker group {name} removed: {olds[name]} pod(s) keep running",
            )
        )
        template = pod_resources(old_groups[name].template)
        orphans.append(summary_amounts({k: v.times(olds[name]) for k, v in template.items()}))
    for name, group in new_groups.items():
        want, have = news[name], olds.get(name, 0)
        if name not in old_groups:
            effects.append(f"worker group {name} is added: {want} pod(s) created")
        elif group.suspend and not old_groups[name].suspend:
            effects.append(f"worker group {name} is suspended: its {have} pod(s) are deleted")
            findings.append(
                settings.finding(
                    "suspend-deletes-pods",
                    change.ref,
                    f"worker group {name} suspended: {have} pod(s) deleted",
                )
            )
        if want > have:
            created += want - have
            if name in old_groups:
                effects.append(f"worker group {name}: {have} -> {want} pods, {want - have} created")
        elif want < have and group.suspend:
            deleted += have - want
        elif want < have and autoscaled:
            effects.append(
                f"worker group {name}: {have} -> {want} pods asked, but with the autoscaler "
                "the operator deletes none; the autoscaler chooses which go"
            )
        elif want < have:
            deleted += have - want
            effects.append(f"worker group {name}: {have} -> {want} pods, {have - want} deleted")
    return created, deleted, add_resources(*orphans) if orphans else {}


def _spec_uncertain(change: ObjectChange) -> list[str]:
    """Paths under ``spec`` the engine knows only at deploy, or secrets it says change."""
    unknown = [p for p in change.unknown if p.startswith("spec.")]
    secret = [
        p
        for p in change.secret
        if p.startswith("spec.")
        and any(
            p == e or p.startswith(e + ".") or p.startswith(e + "[") for e in change.engine_changed
        )
    ]
    return sorted(set(unknown) | set(secret))


def _segments(path: str) -> set[str]:
    return {part.split("[", 1)[0] for part in path.split(".")}


def _summary(created: int, deleted: int, reshaped: bool, recreate: bool) -> str:
    parts = []
    if created:
        parts.append(f"{created} pod(s) created")
    if deleted:
        parts.append(f"{deleted} deleted")
    text = ", ".join(parts) or "no pod changes"
    if reshaped and not recreate:
        text += "; running pods keep the old template"
    return text
