"""RBAC: the autoscaler's ServiceAccount/Role/RoleBinding in the cluster's namespace,
and the operator's own ClusterRole, rendered from one table of what it really uses."""

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

RBAC_API_VERSION: Final = "rbac.authorization.k8s.io/v1"
DEFAULT_CLUSTER_ROLE_NAME: Final = "kuberay-operator"


@dataclass(frozen=True, slots=True)
class Permission:
    """One need of one controller: these verbs on these resources of an API group."""

    controller: str
    group: str
    resources: tuple[str, ...]
    verbs: tuple[str, ...]
    why: str
    only_with: str = ""
    """A feature gate (KubeRay's name) or an operator flag without which the need never
    arises; empty: always. A deployment grants it only when it turns that on."""


USE_KUBERNETES_PROXY: Final = "--use-kubernetes-proxy"
"""The flag that sends dashboard and serve proxy calls through the API server."""
_PROXY: Final = USE_KUBERNETES_PROXY
_CRON: Final = "RayCronJob"
_INCREMENTAL: Final = "RayServiceIncrementalUpgrade"
_READ_CREATE: Final = ("get", "list", "watch", "create")

OPERATOR_PERMISSIONS: Final[tuple[Permission, ...]] = (
    # Granted in a Role of the operator's own namespace, never cluster-wide (see
    # components/_operator_rbac.py): the manager watches its one Lease to hear a release.
    Permission("manager", "coordination.k8s.io", ("leases",),
               ("get", "list", "watch", "create", "update"), "leader election"),
    Permission("manager", "events.k8s.io", ("events",), ("create", "patch"), "events"),
    Permission("manager", "", ("events",), ("create", "patch"),
               "events where events.k8s.io/v1 is not served"),
    # The RayCluster controller: exactly what its steps declare (a unit test compares
    # this with operator_runtime.controllers.raycluster.PERMISSIONS).
    Permission("raycluster", "ray.io", ("rayclusters",), ("get", "list", "watch", "patch"),
               "watch clusters, add/remove the GCS FT finalizer; get/patch are granted to "
               "the autoscaler Role"),
    Permission("raycluster", "ray.io", ("rayclusters/status",), ("update",), "status"),
    Permission("raycluster", "ray.io", ("rayclusters/finalizers",), ("update",),
               "owner references that block deletion"),
    Permission("raycluster", "", ("pods",), ("get", "list", "watch", "create", "delete", "patch"),
               "head and worker pods; patch restamps the head; get is granted to the "
               "autoscaler Role"),
    Permission("raycluster", "", ("pods/resize",), ("patch",),
               "granted to the autoscaler Role, so the operator must hold it too"),
    Permission("raycluster", "", ("services",), ("list", "watch", "create"),
               "head, serve and headless Services"),
    Permission("raycluster", "", ("serviceaccounts",), _READ_CREATE,
               "autoscaler ServiceAccount; get checks a user-named one"),
    Permission("raycluster", "", ("secrets",), ("get", "create"),
               "auth token Secret, read by name: no cache of every Secret"),
    Permission("raycluster", "", ("persistentvolumeclaims",), (*_READ_CREATE, "update"),
               "RocksDB GCS storage; get checks a user's claimName"),
    Permission("raycluster", "rbac.authorization.k8s.io", ("roles",), ("list", "watch", "create"),
               "autoscaler Role"),
    Permission("raycluster", "rbac.authorization.k8s.io", ("rolebindings",),
               ("list", "watch", "create"), "autoscaler RoleBinding"),
    Permission("raycluster", "networking.k8s.io", ("ingresses",),
               ("list", "watch", "create", "update"), "dashboard Ingress"),
    Permission("raycluster", "batch", ("jobs",), ("list", "watch", "create"),
               "Redis cleanup Job of GCS FT"),
    # The RayJob controller (compared with operator_runtime.controllers.rayjob.PERMISSIONS).
    Permission("rayjob", "ray.io", ("rayjobs",), ("list", "watch", "patch", "delete"),
               "watch RayJobs; patch the finalizer; DeleteSelf"),
    Permission("rayjob", "ray.io", ("rayjobs/status",), ("update",), "status"),
    Permission("rayjob", "ray.io", ("rayjobs/finalizers",), ("update",),
               "owner references that block deletion"),
    Permission("rayjob", "ray.io", ("rayclusters",),
               ("get", "list", "watch", "create", "update", "delete"),
               "the RayJob's cluster; update suspends its workers (DeleteWorkers)"),
    Permission("rayjob", "", ("services",), ("get", "list", "watch", "create", "update"),
               "the <job>-head-svc Service; the head Service's dashboard port"),
    Permission("rayjob", "batch", ("jobs",), ("get", "list", "watch", "create", "delete"),
               "the submitter Job"),
    Permission("rayjob", "", ("pods",), ("list", "watch"),
               "the head pod's submitter container (SidecarMode)"),
    Permission("rayjob", "", ("secrets",), ("get",), "a token-auth cluster's token"),
    Permission("rayjob", "", ("services/proxy",), ("get", "create"),
               "--use-kubernetes-proxy: the dashboard through the API server", _PROXY),
    # The RayService controller (compared with operator_runtime.controllers.rayservice.PERMISSIONS).
    Permission("rayservice", "ray.io", ("rayservices",), ("list", "watch", "patch"),
               "watch RayServices; patch the finalizer"),
    Permission("rayservice", "ray.io", ("rayservices/status",), ("update",), "status"),
    Permission("rayservice", "ray.io", ("rayservices/finalizers",), ("update",),
               "owner references that block deletion"),
    Permission("rayservice", "ray.io", ("rayclusters",),
               ("get", "list", "watch", "create", "update", "patch", "delete"),
               "the RayService's clusters; patch stamps a dangling one's deletion time"),
    Permission("rayservice", "", ("services",),
               ("get", "list", "watch", "create", "update", "delete"),
               "<s>-head-svc and <s>-serve-svc, switched to the ready cluster"),
    Permission("rayservice", "", ("pods",), ("list", "watch", "patch"),
               "the head pod's ray.io/serve label"),
    Permission("rayservice", "discovery.k8s.io", ("endpointslices",), ("list", "watch"),
               "numServeEndpoints"),
    Permission("rayservice", "gateway.networking.k8s.io", ("gateways", "httproutes"),
               ("get", "create", "update", "delete"), "incremental upgrade", _INCREMENTAL),
    Permission("rayservice", "", ("secrets",), ("get",), "a token-auth cluster's token"),
    Permission("rayservice", "", ("services/proxy",), ("get", "create"),
               "--use-kubernetes-proxy: the dashboard through the API server", _PROXY),
    Permission("rayservice", "", ("pods/proxy",), ("get", "create"),
               "--use-kubernetes-proxy: the serve proxy's health through the API server",
               _PROXY),
    # The RayCronJob controller, with the RayCronJob gate on (compared with
    # operator_runtime.controllers.raycronjob.PERMISSIONS).
    Permission("raycronjob", "ray.io", ("raycronjobs",), ("list", "watch"), "watch RayCronJobs",
               _CRON),
    Permission("raycronjob", "ray.io", ("raycronjobs/status",), ("update",), "lastScheduleTime",
               _CRON),
    Permission("raycronjob", "ray.io", ("raycronjobs/finalizers",), ("update",),
               "owner references that block deletion", _CRON),
    Permission("raycronjob", "ray.io", ("rayjobs",), ("create",), "one RayJob per tick", _CRON),
)  # fmt: skip
"""Every permission the operator's controllers use; the ClusterRole is rendered from
this table and a test compares it with what the reconcile steps declare."""


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
