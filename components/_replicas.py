"""Who owns ``replicas``: the Ray autoscaler when the cluster autoscales, else Pulumi.

With in-tree autoscaling the autoscaler writes each group's ``replicas`` and
``scaleStrategy.workersToDelete``. Server-side apply gives a field to the manager that
applied it last, so Pulumi must never apply those two: leaving them out lets the
autoscaler's values stand, and our CRDs key ``workerGroupSpecs`` by ``groupName`` so the
group's other fields stay Pulumi's (KubeRay's atomic list would conflict on every update;
docs/conformance.md). The operator starts a group applied without ``replicas`` at
``minReplicas``. Without autoscaling nobody but Pulumi should set ``replicas``; the
workload components then apply with ``pulumi.com/patchForce`` so ``pulumi up`` puts a
hand-edited value back instead of failing with a field-manager conflict.

The spec may hold Outputs at any level (a worker group built with ``apply``, an Output
autoscaling flag), so every helper here works through them without resolving the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import pulumi

__all__ = ["get_at", "map_at", "without_autoscaler_fields"]


def map_at(value: object, path: Sequence[str], change: Callable[[object], object]) -> object:
    """``value`` with ``change`` applied to the node at ``path``, through any Outputs."""
    if isinstance(value, pulumi.Output):
        return value.apply(lambda resolved: map_at(resolved, path, change))
    if not path:
        return change(value)
    if not isinstance(value, Mapping) or path[0] not in value:
        return value
    return {**value, path[0]: map_at(value[path[0]], path[1:], change)}


def get_at(value: object, path: Sequence[str]) -> object:
    """The node at ``path`` (None if absent), as an Output if any step is one."""
    if isinstance(value, pulumi.Output):
        return value.apply(lambda resolved: get_at(resolved, path))
    if not path:
        return value
    if not isinstance(value, Mapping):
        return None
    return get_at(value.get(path[0]), path[1:])


def _each(value: object, change: Callable[[object], object]) -> object:
    if isinstance(value, pulumi.Output):
        return value.apply(lambda resolved: _each(resolved, change))
    if isinstance(value, list | tuple):
        return [change(item) for item in value]
    return value


def _group_without_autoscaler_fields(group: object) -> object:
    if isinstance(group, pulumi.Output):
        return group.apply(_group_without_autoscaler_fields)
    if not isinstance(group, Mapping):
        return group
    kept = {k: v for k, v in group.items() if k != "replicas"}
    strategy = kept.get("scaleStrategy")
    if isinstance(strategy, Mapping):
        rest = {k: v for k, v in strategy.items() if k != "workersToDelete"}
        if rest:
            kept["scaleStrategy"] = rest
        else:
            del kept["scaleStrategy"]
    elif isinstance(strategy, pulumi.Output):
        kept["scaleStrategy"] = strategy.apply(
            lambda s: {k: v for k, v in s.items() if k != "workersToDelete"}
            if isinstance(s, Mapping) else s
        )  # fmt: skip
    return kept


def without_autoscaler_fields(cluster: object) -> object:
    """A cluster spec without the fields the autoscaler owns, when it autoscales."""
    if isinstance(cluster, pulumi.Output):
        return cluster.apply(without_autoscaler_fields)
    if not isinstance(cluster, Mapping) or "workerGroupSpecs" not in cluster:
        return cluster
    groups = cluster["workerGroupSpecs"]
    flag = cluster.get("enableInTreeAutoscaling")

    def stripped(on: object) -> object:
        return _each(groups, _group_without_autoscaler_fields) if on else groups

    new_groups = flag.apply(stripped) if isinstance(flag, pulumi.Output) else stripped(flag)
    return {**cluster, "workerGroupSpecs": new_groups}
