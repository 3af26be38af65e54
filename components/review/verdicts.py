"""What every kind's verdict is built from: the object parsed as the operator parses
it, the verdict's fixed fields, the answer for an object the operator refuses, and the
paths of a spec the engine cannot show (known at deploy, or a secret it says changed).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import TypedDict, TypeVar

from operator_runtime.api import InvalidObjectError, RayCluster, load_object

from .changes import ObjectChange
from .ledger import autoscaler_bounds, cluster_pods, cluster_resources, groups_without_replicas
from .model import Resources, Verdict, add_resources, peak_resources
from .rules import ReviewSettings

__all__ = ["Ledger", "base", "invalid", "judge", "ledger", "load", "spec_uncertain", "swap"]

_Kind = TypeVar("_Kind")


class Ledger(TypedDict):
    """The ledger fields of a ``Verdict``."""

    pods_before: int
    pods_after: int
    pods_created: int
    pods_deleted: int
    peak_pods: int
    before: Resources
    after: Resources
    peak: Resources


def load(
    document: Mapping[str, object] | None, settings: ReviewSettings, kind: type[_Kind]
) -> _Kind | None:
    """``document`` as the operator parses it (``None`` stays ``None``); raises
    ``InvalidObjectError`` for an object it refuses."""
    if document is None:
        return None
    obj = load_object(dict(document), settings.options.feature_gates)
    assert isinstance(obj, kind)
    return obj


def judge(
    change: ObjectChange,
    settings: ReviewSettings,
    kind: type[_Kind],
    *,
    created: Callable[[ObjectChange, _Kind, ReviewSettings], Verdict],
    deleted: Callable[[ObjectChange, _Kind, ReviewSettings], Verdict],
    replaced: Callable[[ObjectChange, _Kind, _Kind, ReviewSettings], Verdict],
    updated: Callable[[ObjectChange, _Kind, _Kind, ReviewSettings], Verdict],
    cluster_after: Callable[[_Kind, ReviewSettings], RayCluster | None],
    cluster_spec: tuple[str, ...],
) -> Verdict:
    """Parse both sides as the operator does (a refused object gets ``invalid``), hand
    the change to the verdict for its op, and give the autoscaler's range of the cluster
    the new spec runs (``cluster_after``; None: no range), saying which of its groups'
    replicas the autoscaler owns (read at ``cluster_spec`` in the document)."""
    try:
        old = load(change.before, settings, kind)
        new = load(change.after, settings, kind)
    except InvalidObjectError as error:
        return invalid(change, settings, str(error))
    if new is None:
        assert old is not None
        return deleted(change, old, settings)
    if old is None:
        verdict = created(change, new, settings)
    elif change.op == "replace":
        verdict = replaced(change, old, new, settings)
    else:
        verdict = updated(change, old, new, settings)
    cluster = cluster_after(new, settings)
    if cluster is None:
        return verdict
    lowest, highest = autoscaler_bounds(cluster)
    effects = verdict.effects
    spec: object = change.after
    for key in cluster_spec:
        spec = spec.get(key) if isinstance(spec, dict) else None
    unset = groups_without_replicas(spec if isinstance(spec, dict) else None)
    if cluster.spec.enable_in_tree_autoscaling and unset:
        effects += (
            f"the autoscaler owns the replicas of {', '.join(unset)} (not in the spec): the "
            "counts here start them at minReplicas; the running count is the autoscaler's",
        )
    return dataclasses.replace(verdict, lowest=lowest, highest=highest, effects=effects)


def ledger(
    *,
    pods_before: int = 0,
    pods_after: int = 0,
    created: int = 0,
    deleted: int = 0,
    before: Resources | None = None,
    after: Resources | None = None,
    together: bool = False,
) -> Ledger:
    """A verdict's ledger fields: pods and resources before and after, and the peak,
    the larger side, or both sides added when old and new are held ``together``."""
    old, new = before or {}, after or {}
    return Ledger(
        pods_before=pods_before,
        pods_after=pods_after,
        pods_created=created,
        pods_deleted=deleted,
        peak_pods=pods_before + pods_after if together else max(pods_before, pods_after),
        before=old,
        after=new,
        peak=add_resources(old, new) if together else peak_resources(old, new),
    )


def swap(old: RayCluster | None, new: RayCluster | None, *, together: bool = False) -> Ledger:
    """The ledger of a cluster replaced by another (either may be none): every pod of
    ``old`` goes, every pod of ``new`` comes; ``together``: both are held at once."""
    before = sum(cluster_pods(old).values()) if old is not None else 0
    after = sum(cluster_pods(new).values()) if new is not None else 0
    return ledger(
        pods_before=before,
        pods_after=after,
        created=after,
        deleted=before,
        before=cluster_resources(old) if old is not None else None,
        after=cluster_resources(new) if new is not None else None,
        together=together,
    )


def base(change: ObjectChange, **fields: object) -> Verdict:
    return Verdict(
        kind=change.kind,
        namespace=change.namespace,
        name=change.name,
        op=change.op,
        changed=change.changed,
        origin=change.origin,
        **fields,  # type: ignore[arg-type]
    )


def invalid(change: ObjectChange, settings: ReviewSettings, message: str) -> Verdict:
    if change.unknown or change.secret:
        finding = settings.finding(
            "known-at-deploy",
            change.ref,
            "not checked: it holds values known only at deploy or secret, which may be why "
            "it does not parse",
        )
        return base(change, summary="known at deploy", findings=(finding,), known_at_deploy=True)
    finding = settings.finding("invalid-object", change.ref, message)
    return base(change, summary="refused by the operator", findings=(finding,))


def spec_uncertain(change: ObjectChange, prefix: str = "spec.") -> list[str]:
    """Paths under ``prefix`` the engine knows only at deploy, or secrets it says change."""
    unknown = [p for p in change.unknown if p.startswith(prefix)]
    secret = [
        p
        for p in change.secret
        if p.startswith(prefix)
        and any(
            p == e or p.startswith(e + ".") or p.startswith(e + "[") for e in change.engine_changed
        )
    ]
    return sorted(set(unknown) | set(secret))
