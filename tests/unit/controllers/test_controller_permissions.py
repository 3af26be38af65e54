"""The operator's ClusterRole grants exactly what the RayCluster steps declare."""

from __future__ import annotations

import dataclasses

from operator_runtime.controllers.raycluster import GATE_STEPS, PERMISSIONS, RESOURCE_STEPS
from operator_runtime.controllers.raycluster.controller import WATCHED
from operator_runtime.controllers.raycluster.reconciliation import Caches
from operator_runtime.render import (
    OPERATOR_PERMISSIONS,
    ClusterRoleParams,
    Permission,
    build_operator_cluster_role,
)


def _triples(permissions: tuple[Permission, ...] | list[Permission]) -> set[tuple[str, str, str]]:
    return {(p.group, r, v) for p in permissions for r in p.resources for v in p.verbs}


def test_cluster_role_covers_exactly_what_the_steps_declare() -> None:
    role = build_operator_cluster_role(
        params=ClusterRoleParams(controllers=frozenset({"raycluster"}))
    )
    granted = {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    declared = _triples(PERMISSIONS)
    assert granted - declared == set(), "granted but never used by a step"
    assert declared - granted == set(), "used by a step but not granted"
    table = _triples([p for p in OPERATOR_PERMISSIONS if p.controller == "raycluster"])
    assert table == declared


def test_every_declared_need_says_why() -> None:
    assert all(p.why and p.controller == "raycluster" for p in PERMISSIONS)


def test_every_watched_kind_is_listable_and_watchable() -> None:
    declared = _triples(PERMISSIONS)
    for kind, _selector in WATCHED.values():
        assert {(kind.group, kind.plural, "list"), (kind.group, kind.plural, "watch")} <= declared


def test_the_caches_are_the_watched_kinds() -> None:
    assert [f.name for f in dataclasses.fields(Caches)] == list(WATCHED)


def test_steps_run_in_kuberays_order() -> None:
    assert [step.__name__ for step in GATE_STEPS] == [
        "skip_unmanaged",
        "validate",
        "gcs_ft_finalizer",
        "stop_if_deleting",
    ]
    assert [step.__name__ for step in RESOURCE_STEPS] == [
        "reconcile_autoscaler_service_account",
        "reconcile_autoscaler_role",
        "reconcile_autoscaler_role_binding",
        "reconcile_ingress",
        "reconcile_auth_secret",
        "reconcile_head_service",
        "reconcile_headless_service",
        "reconcile_serve_service",
        "reconcile_gcs_storage_pvc",
        "reconcile_pods",
    ]
