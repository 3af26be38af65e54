"""RBAC: the autoscaler's ServiceAccount/Role/RoleBinding in the cluster's namespace,
and the operator's own ClusterRole, rendered from the table of what its controllers
declare they use (``operator_permissions.py``, generated from their ``need()`` calls)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from operator_runtime.api import JSONObject, JSONValue, RayCluster
from operator_runtime.api.features import GATES, FeatureGates
from operator_runtime.render.metadata import cluster_labels, object_meta
from operator_runtime.render.names import (
    autoscaler_service_account_name,
    check_name,
    cluster_name,
    namespace_of,
)
from operator_runtime.render.operator_permissions import OPERATOR_PERMISSIONS
from operator_runtime.render.permission import (
    USE_KUBERNETES_PROXY,
    Permission,
    batch_scheduler_flag,
)

RBAC_API_VERSION: Final = "rbac.authorization.k8s.io/v1"
DEFAULT_CLUSTER_ROLE_NAME: Final = "kuberay-operator"

__all__ = [
    "DEFAULT_CLUSTER_ROLE_NAME",
    "OPERATOR_PERMISSIONS",
    "RBAC_API_VERSION",
    "USE_KUBERNETES_PROXY",
    "AutoscalerRbacParams",
    "ClusterRoleParams",
    "Permission",
    "autoscaler_service_account_needed",
    "batch_scheduler_flag",
    "build_autoscaler_role",
    "build_autoscaler_role_binding",
    "build_autoscaler_service_account",
    "build_operator_cluster_role",
    "turned_on_by",
]


@dataclass(frozen=True, slots=True)
class AutoscalerRbacParams:
    cluster: RayCluster


@dataclass(frozen=True, slots=True)
class ClusterRoleParams:
    name: str = DEFAULT_CLUSTER_ROLE_NAME
    permissions: tuple[Permission, ...] = OPERATOR_PERMISSIONS
    controllers: frozenset[str] | None = None
    """Only these controllers' needs (None: all), e.g. when some are disabled."""
    turned_on: frozenset[str] | None = None
    """The gates and flags the operator runs with (``turned_on_by``); a need ``only_with``
    one of them is granted only if it is here. None: every need, as for a role meant for
    any deployment."""


def turned_on_by(gates: FeatureGates, flags: Iterable[str] = ()) -> frozenset[str]:
    """What ``Permission.only_with`` is matched against: the enabled gates and the
    flags given."""
    return frozenset({*(name for name in GATES if gates.enabled(name)), *flags})


def autoscaler_service_account_needed(cluster: RayCluster) -> bool:
    """The operator creates the ServiceAccount only if the user named none; a user-named
    one must exist already (KubeRay reports AutoscalerServiceAccountNotFound)."""
    spec = cluster.spec.head_group_spec.template.get("spec")
    named = isinstance(spec, dict) and bool(spec.get("serviceAccountName"))
    return bool(cluster.spec.enable_in_tree_autoscaling) and not named


def build_autoscaler_service_account(*, params: AutoscalerRbacParams) -> JSONObject:
    cluster = params.cluster
    meta = object_meta(
        name=check_name(autoscaler_service_account_name(cluster)),
        namespace=namespace_of(cluster),
        labels=cluster_labels(cluster),
        owner=cluster,
    )
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta}


def build_autoscaler_role(*, params: AutoscalerRbacParams) -> JSONObject:
    """What the autoscaler does: read and patch pods (deletion marks, resize) and the
    RayCluster (replicas, workersToDelete)."""
    cluster = params.cluster
    rules: list[JSONValue] = [
        _rule("", ("pods",), ("get", "list", "watch", "patch")),
        _rule("", ("pods/resize",), ("patch",)),
        _rule("ray.io", ("rayclusters",), ("get", "patch")),
    ]
    meta = object_meta(
        name=check_name(cluster_name(cluster)),
        namespace=namespace_of(cluster),
        labels=cluster_labels(cluster),
        owner=cluster,
    )
    return {"apiVersion": RBAC_API_VERSION, "kind": "Role", "metadata": meta, "rules": rules}


def build_autoscaler_role_binding(*, params: AutoscalerRbacParams) -> JSONObject:
    cluster = params.cluster
    namespace = namespace_of(cluster)
    meta = object_meta(
        name=check_name(cluster_name(cluster)),
        namespace=namespace,
        labels=cluster_labels(cluster),
        owner=cluster,
    )
    subject: JSONObject = {
        "kind": "ServiceAccount",
        "name": check_name(autoscaler_service_account_name(cluster)),
        "namespace": namespace,
    }
    return {
        "apiVersion": RBAC_API_VERSION,
        "kind": "RoleBinding",
        "metadata": meta,
        "subjects": [subject],
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "Role",
            "name": check_name(cluster_name(cluster)),
        },
    }


def build_operator_cluster_role(*, params: ClusterRoleParams) -> JSONObject:
    """One rule per (API group, verb set), resources sorted, like controller-gen."""
    wanted = [
        p
        for p in params.permissions
        if (params.controllers is None or p.controller in params.controllers)
        and (params.turned_on is None or not p.only_with or p.only_with in params.turned_on)
    ]
    verbs_by_resource: dict[tuple[str, str], set[str]] = defaultdict(set)
    for permission in wanted:
        for resource in permission.resources:
            verbs_by_resource[(permission.group, resource)].update(permission.verbs)
    grouped: dict[tuple[str, tuple[str, ...]], list[str]] = defaultdict(list)
    for (group, resource), verbs in verbs_by_resource.items():
        grouped[(group, tuple(sorted(verbs)))].append(resource)
    rules: list[JSONValue] = [
        _rule(group, sorted(resources), verbs)
        for (group, verbs), resources in sorted(grouped.items(), key=lambda item: item[0])
    ]
    return {
        "apiVersion": RBAC_API_VERSION,
        "kind": "ClusterRole",
        "metadata": {"name": params.name},
        "rules": rules,
    }


def _rule(group: str, resources: Iterable[str], verbs: Iterable[str]) -> JSONObject:
    return {"apiGroups": [group], "resources": list(resources), "verbs": list(verbs)}
