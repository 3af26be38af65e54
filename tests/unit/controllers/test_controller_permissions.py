"""The operator's ClusterRole grants exactly what each controller declares it uses."""

from __future__ import annotations

import dataclasses

import pytest

from operator_runtime.controllers import raycronjob, rayjob, rayservice
from operator_runtime.controllers.raycluster import GATE_STEPS, PERMISSIONS, RESOURCE_STEPS
from operator_runtime.controllers.raycluster.controller import WATCHED
from operator_runtime.controllers.raycluster.reconciliation import Caches
from operator_runtime.controllers.rayjob.run import JobCaches
from operator_runtime.controllers.rayservice.run import ServiceCaches
from operator_runtime.render import (
    OPERATOR_PERMISSIONS,
    ClusterRoleParams,
    Permission,
    build_operator_cluster_role,
)
from operator_runtime.runtime.kinds import ResourceKind


def _triples(permissions: tuple[Permission, ...] | list[Permission]) -> set[tuple[str, str, str]]:
    return {(p.group, r, v) for p in permissions for r in p.resources for v in p.verbs}


DECLARED = {
    "raycluster": PERMISSIONS,
    "rayjob": rayjob.PERMISSIONS,
    "raycronjob": raycronjob.PERMISSIONS,
    "rayservice": rayservice.PERMISSIONS,
}


@pytest.mark.parametrize("controller", sorted(DECLARED))
def test_cluster_role_covers_exactly_what_the_steps_declare(controller: str) -> None:
    role = build_operator_cluster_role(
        params=ClusterRoleParams(controllers=frozenset({controller}))
    )
    granted = {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    declared = _triples(DECLARED[controller])
    assert granted - declared == set(), "granted but never used by a step"
    assert declared - granted == set(), "used by a step but not granted"
    table = _triples([p for p in OPERATOR_PERMISSIONS if p.controller == controller])
    assert table == declared


@pytest.mark.parametrize("controller", sorted(DECLARED))
def test_every_declared_need_says_why(controller: str) -> None:
    assert all(p.why and p.controller == controller for p in DECLARED[controller])


@pytest.mark.parametrize(
    ("declared", "watched"),
    [
        (PERMISSIONS, WATCHED),
        (rayjob.PERMISSIONS, rayjob.WATCHED),
        (raycronjob.PERMISSIONS, raycronjob.WATCHED),
        (rayservice.PERMISSIONS, rayservice.WATCHED),
    ],
    ids=["raycluster", "rayjob", "raycronjob", "rayservice"],
)
def test_every_watched_kind_is_listable_and_watchable(
    declared: tuple[Permission, ...], watched: dict[str, tuple[ResourceKind, str | None]]
) -> None:
    triples = _triples(declared)
    for kind, _selector in watched.values():
        assert {(kind.group, kind.plural, "list"), (kind.group, kind.plural, "watch")} <= triples


def test_the_caches_are_the_watched_kinds() -> None:
    assert [f.name for f in dataclasses.fields(Caches)] == list(WATCHED)
    assert [f.name for f in dataclasses.fields(JobCaches)] == list(rayjob.WATCHED)
    assert [f.name for f in dataclasses.fields(raycronjob.CronCaches)] == list(raycronjob.WATCHED)
    assert [f.name for f in dataclasses.fields(ServiceCaches)] == list(rayservice.WATCHED)


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
