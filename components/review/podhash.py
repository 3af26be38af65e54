"""Whether a RayCluster change reshapes its pods, judged by the hash the Recreate
strategy compares (``render.recreate.spec_hash``, the controller's own).

The hash leaves out replicas, min/max, ``workersToDelete``, tolerations and scheduling
gates; a change only there replaces no pod. Without Recreate a change the hash covers
reaches only pods created later (KubeRay #3840, #3905): ``reshaped_parts`` says which
running pods (the head, each group in both specs) would now be built differently.
"""

from __future__ import annotations

from operator_runtime.api import RayCluster, RayClusterSpec, WorkerGroupSpec
from operator_runtime.render.recreate import POD_SPEC_IGNORED, WORKER_GROUP_IGNORED, spec_hash

from .changes import ObjectChange

__all__ = ["hash_ignored_paths", "reshaped_parts"]

_IGNORED_LEAVES = frozenset(POD_SPEC_IGNORED + WORKER_GROUP_IGNORED + ("workersToDelete",))
_SAID_PER_GROUP = frozenset({"replicas"})
"""Ignored fields whose effect the worker-group lines already give."""


def hash_ignored_paths(change: ObjectChange) -> list[str]:
    """The changed paths the pod hash leaves out (``replicas`` aside: the worker-group
    lines say what it does)."""
    return sorted({p for p in change.changed if _segments(p) & (_IGNORED_LEAVES - _SAID_PER_GROUP)})


def reshaped_parts(old: RayCluster, new: RayCluster) -> list[str]:
    """Which running pods would be built differently: the head, and each group in both
    specs, each judged by ``spec_hash`` of both specs cut down to that part (a group
    added, removed or suspended changes the Recreate hash, not how other pods are built)."""
    new_groups = {g.group_name for g in new.spec.worker_group_specs or ()}
    parts = []
    if _cut_differs(old, new, None):
        parts.append("the head")
    for group in old.spec.worker_group_specs or ():
        if group.group_name in new_groups and _cut_differs(old, new, group.group_name):
            parts.append(f"worker group {group.group_name}")
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


def _segments(path: str) -> set[str]:
    return {part.split("[", 1)[0] for part in path.split(".")}
