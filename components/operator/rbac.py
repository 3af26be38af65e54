"""The operator's RBAC, from the one permission table, ``OPERATOR_PERMISSIONS`` of
``operator_runtime/render/operator_permissions.py`` (generated from the controllers'
``need()`` declarations by ``python -m operator_runtime.controllers.permission_table``).

Two modes:

- cluster-scoped (default): a ClusterRole with every controller permission and a
  ClusterRoleBinding to the operator's ServiceAccount;
- namespaced (``cluster_scoped_rbac=False``): the same rules in a Role and RoleBinding in
  each watched namespace, and no cluster-scoped object at all.

In both, the Lease lives in a Role of the operator's own namespace, never in the
cluster-wide grant: ``create``/``update`` on every Lease of the cluster would let the
operator take over any controller's leader election (kube-controller-manager's in
kube-system included). So the table's Lease permission moves to the leader-election Role,
together with the events the manager writes there; the ClusterRole keeps the rest.

Needs that come only with a feature gate or a flag (``Permission.only_with``: the
RayCronJob and NetworkPolicy controllers, the Gateway API of incremental upgrades, the API
server proxy of ``--use-kubernetes-proxy``, a batch scheduler's PodGroups) are granted
only when the Deployment turns them on.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import pulumi
import pulumi_kubernetes as k8s

from operator_runtime.api import JSONObject, JSONValue
from operator_runtime.render.rbac import (
    OPERATOR_PERMISSIONS,
    USE_KUBERNETES_PROXY,
    ClusterRoleParams,
    Permission,
    batch_scheduler_flag,
    build_operator_cluster_role,
    turned_on_by,
)

from .args import Plan, name_of

__all__ = [
    "LEADER_ELECTION_RESOURCES",
    "Rbac",
    "create_rbac",
    "leader_election_rules",
    "turned_on",
    "workload_rules",
]

LEADER_ELECTION_RESOURCES: Final = frozenset({("coordination.k8s.io", "leases")})
"""(API group, resource) granted only in the operator's namespace."""
_MANAGER: Final = "manager"
"""The table's name for the manager's own needs (Lease, events), as opposed to a controller's."""
_RBAC_GROUP: Final = "rbac.authorization.k8s.io"


def _without_leases(permission: Permission) -> Permission | None:
    kept = tuple(
        r for r in permission.resources if (permission.group, r) not in LEADER_ELECTION_RESOURCES
    )
    return dataclasses.replace(permission, resources=kept) if kept else None


def workload_rules(
    permissions: Sequence[Permission] = OPERATOR_PERMISSIONS,
    turned_on: frozenset[str] | None = None,
) -> list[JSONObject]:
    """The rules where the Ray objects live: everything in the table but the Lease, and
    of the needs that come with a gate or a flag only those ``turned_on`` (None: all)."""
    kept = tuple(p for p in map(_without_leases, permissions) if p is not None)
    return _rules(ClusterRoleParams(permissions=kept, turned_on=turned_on))


def turned_on(plan: Plan) -> frozenset[str]:
    """The gates and flags the Deployment runs the operator with (``operator_flags``)."""
    flags = [USE_KUBERNETES_PROXY] * plan.use_kubernetes_proxy
    if plan.batch_scheduler:
        flags.append(batch_scheduler_flag(plan.batch_scheduler))
    return turned_on_by(plan.feature_gates, flags)


def leader_election_rules(
    permissions: Sequence[Permission] = OPERATOR_PERMISSIONS,
) -> list[JSONObject]:
    """The manager's own needs (the Lease and its events), for its own namespace."""
    return _rules(
        ClusterRoleParams(permissions=tuple(permissions), controllers=frozenset({_MANAGER}))
    )


def _rules(params: ClusterRoleParams) -> list[JSONObject]:
    # build_operator_cluster_role merges and sorts rules like controller-gen; a Role
    # wants exactly the same rules, so it is reused for every mode.
    rules = build_operator_cluster_role(params=params)["rules"]
    assert isinstance(rules, list)
    return [rule for rule in rules if isinstance(rule, dict)]


def _policy_rule(rule: JSONObject) -> k8s.rbac.v1.PolicyRuleArgs:
    return k8s.rbac.v1.PolicyRuleArgs(
        api_groups=_strings(rule["apiGroups"]),
        resources=_strings(rule["resources"]),
        verbs=_strings(rule["verbs"]),
    )


def _strings(value: JSONValue) -> list[str]:
    assert isinstance(value, list)
    return [str(item) for item in value]


@dataclass(frozen=True)
class Rbac:
    bindings: list[pulumi.Resource]
    """What the Deployment waits for: it must not start before it may list its objects."""
    cluster_role_name: pulumi.Output[str | None]
    role_names: pulumi.Output[dict[str, str]]
    """Watched namespace -> name of the Role there (namespaced RBAC only)."""
    leader_election_role_name: pulumi.Output[str | None]


def create_rbac(
    parent: pulumi.Resource,
    plan: Plan,
    namespace: pulumi.Input[str],
    service_account_name: pulumi.Input[str],
) -> Rbac:
    subject = k8s.rbac.v1.SubjectArgs(
        kind="ServiceAccount", name=service_account_name, namespace=namespace
    )
    opts = plan.child(parent)
    name = plan.resource_name
    bindings: list[pulumi.Resource] = []
    cluster_role_name: pulumi.Output[str | None] = pulumi.Output.from_input(None)
    role_names: dict[str, pulumi.Output[str]] = {}
    rules = [_policy_rule(rule) for rule in workload_rules(turned_on=turned_on(plan))]
    if plan.cluster_scoped_rbac:
        cluster_role = k8s.rbac.v1.ClusterRole(
            name, metadata=plan.metadata(plan.base_name), rules=rules, opts=opts
        )
        bindings.append(
            k8s.rbac.v1.ClusterRoleBinding(
                name,
                metadata=plan.metadata(plan.base_name),
                role_ref=k8s.rbac.v1.RoleRefArgs(
                    api_group=_RBAC_GROUP, kind="ClusterRole", name=name_of(cluster_role)
                ),
                subjects=[subject],
                opts=opts,
            )
        )
        cluster_role_name = name_of(cluster_role)
    else:
        for watched in plan.watch_namespaces:
            role = k8s.rbac.v1.Role(
                f"{name}-watch-{watched}",
                metadata=plan.metadata(plan.base_name, watched),
                rules=rules,
                opts=opts,
            )
            bindings.append(
                _role_binding(
                    f"{name}-watch-{watched}", plan, role, plan.base_name, watched, subject, opts
                )
            )
            role_names[watched] = name_of(role)
    leader_election_role_name: pulumi.Output[str | None] = pulumi.Output.from_input(None)
    if plan.leader_election:
        election_name = f"{plan.base_name}-leader-election"
        role = k8s.rbac.v1.Role(
            f"{name}-leader-election",
            metadata=plan.metadata(election_name, namespace),
            rules=[_policy_rule(rule) for rule in leader_election_rules()],
            opts=opts,
        )
        bindings.append(
            _role_binding(
                f"{name}-leader-election", plan, role, election_name, namespace, subject, opts
            )
        )
        leader_election_role_name = name_of(role)
    return Rbac(
        bindings=bindings,
        cluster_role_name=cluster_role_name,
        role_names=(
            pulumi.Output.all(**role_names).apply(dict)
            if role_names
            else pulumi.Output.from_input({})
        ),
        leader_election_role_name=leader_election_role_name,
    )


def _role_binding(
    resource_name: str,
    plan: Plan,
    role: k8s.rbac.v1.Role,
    role_name: str,
    namespace: pulumi.Input[str],
    subject: k8s.rbac.v1.SubjectArgs,
    opts: pulumi.ResourceOptions,
) -> k8s.rbac.v1.RoleBinding:
    """A RoleBinding named like its Role, in the Role's namespace; the Role's name is read
    back from the Role so the binding waits for it."""
    return k8s.rbac.v1.RoleBinding(
        resource_name,
        metadata=plan.metadata(role_name, namespace),
        role_ref=k8s.rbac.v1.RoleRefArgs(api_group=_RBAC_GROUP, kind="Role", name=name_of(role)),
        subjects=[subject],
        opts=opts,
    )
