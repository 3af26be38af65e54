"""What the RayCluster controller does with a change to a RayCluster.

Every answer comes from the functions the controller's pod step calls
(``controllers/raycluster/pods.py``), not from a table of its own:

- the pods a spec asks for, and what they request (``ledger``);
- whether running pods are replaced: only with ``upgradeStrategy: Recreate`` and a
  different ``spec_hash`` (``render.recreate``); without Recreate a template change
  reaches only pods created later (``podhash``; KubeRay #3840, #3905);
- a scale-down without the autoscaler deletes the surplus; with it (and without
  ``ENABLE_RANDOM_POD_DELETE``) the autoscaler chooses, and the operator deletes none;
- the pods of a worker group no longer in the spec are not touched: the controller
  only walks the spec's groups, so they run until the cluster goes; with
  ``spec.networkPolicy`` (gate ``RayClusterNetworkPolicy``) the group's NetworkPolicy is
  deleted all the same, so those pods run unisolated;
- a deletion of a Redis GCS FT cluster waits for its cleanup Job (``render.gcsft``).

The pods running before the change are taken to be what the old spec asks for; an
autoscaled group may hold more or fewer.
"""

from __future__ import annotations

from collections.abc import Mapping

from operator_runtime.api import RayCluster
from operator_runtime.render.gcsft import deletion_timeout, redis_cleanup_needed
from operator_runtime.render.recreate import recreate_requested, spec_hash
from operator_runtime.render.resources import Amount, pod_resources, summary_amounts

from .changes import ObjectChange
from .ledger import (
    HEAD,
    cluster_pods,
    cluster_resources,
)
from .model import Finding, Verdict, add_resources, peak_resources
from .podhash import hash_ignored_paths, reshaped_parts
from .rules import ReviewSettings
from .verdicts import base, judge, ledger, spec_uncertain, swap

__all__ = ["cluster_deleted", "cluster_replaced", "raycluster_verdict"]


def raycluster_verdict(change: ObjectChange, settings: ReviewSettings) -> Verdict:
    return judge(
        change,
        settings,
        RayCluster,
        created=_created,
        deleted=cluster_deleted,
        replaced=cluster_replaced,
        updated=_updated,
        cluster_after=lambda new, _settings: new,
        cluster_spec=("spec",),
    )


def _created(change: ObjectChange, new: RayCluster, settings: ReviewSettings) -> Verdict:
    pods = cluster_pods(new)
    resources = cluster_resources(new)
    workers = sum(pods.values()) - pods.get(HEAD, 0)
    summary = (
        "created suspended: no pods"
        if new.spec.suspend
        else f"created: a head and {workers} worker pod(s)"
    )
    count = sum(pods.values())
    return base(change, summary=summary, **ledger(pods_after=count, created=count, after=resources))


def cluster_deleted(change: ObjectChange, old: RayCluster, settings: ReviewSettings) -> Verdict:
    """``old`` and every pod of it deleted, for ``change`` (the cluster's own, or the
    RayService's or RayJob's that owns it); a Redis GCS FT cluster waits for cleanup."""
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
    return base(
        change,
        summary=f"deleted: {pods} pod(s) go",
        effects=tuple(effects),
        findings=tuple(findings),
        **ledger(pods_before=pods, deleted=pods, before=resources),
    )


def cluster_replaced(
    change: ObjectChange, old: RayCluster, new: RayCluster, settings: ReviewSettings
) -> Verdict:
    """Pulumi replaces ``change``'s object: ``old`` goes, ``new`` comes, both at once when
    the engine creates first."""
    before, after = sum(cluster_pods(old).values()), sum(cluster_pods(new).values())
    reasons = ", ".join(change.replace_reasons) or "a field that cannot change in place"
    effects = [
        f"Pulumi replaces the object ({reasons}): the old cluster's {before} pod(s) are "
        f"deleted and {after} created",
        "the new cluster exists before the old one is deleted"
        if change.create_before_delete
        else "the old cluster is deleted first",
    ]
    finding = settings.finding(
        "replaced-restarts-cluster",
        change.ref,
        f"replaced ({reasons}): every pod is recreated",
    )
    return base(
        change,
        summary=f"replaced: {before} pod(s) deleted, {after} created",
        effects=tuple(effects),
        findings=(finding,),
        **swap(old, new, together=change.create_before_delete),
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
    uncertain = spec_uncertain(change)
    hash_changed = spec_hash(old.spec) != spec_hash(new.spec)
    reshaped = reshaped_parts(old, new)
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
    ignored = hash_ignored_paths(change)
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
    return base(
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
    isolated = new.spec.network_policy is not None and settings.options.feature_gates.enabled(
        "RayClusterNetworkPolicy"
    )
    for name in sorted(set(old_groups) - set(new_groups)):
        effects.append(
            f"worker group {name} is removed, but its {olds[name]} pod(s) keep running "
            "until the cluster is deleted"
            + (
                f", and its NetworkPolicy {new.metadata.name}-workers-{name} is deleted: "
                "they are no longer isolated"
                if isolated
                else ""
            )
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
