"""The operator's ClusterRole grants exactly what each controller declares it uses: the
permission table is generated from the declarations and must be up to date."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from operator_runtime.api import FeatureGates
from operator_runtime.api.features import GATES
from operator_runtime.controllers import (
    mtls,
    networkpolicy,
    permission_table,
    raycronjob,
    rayjob,
    rayservice,
)
from operator_runtime.controllers.networkpolicy.controller import GATE as NETWORK_POLICY_GATE
from operator_runtime.controllers.permissions import MANAGER_NEEDS, declarer
from operator_runtime.controllers.raycluster import GATE_STEPS, PERMISSIONS, RESOURCE_STEPS
from operator_runtime.controllers.raycluster.controller import WATCHED
from operator_runtime.controllers.raycluster.run import ClusterCaches
from operator_runtime.controllers.raycronjob.controller import GATE as CRON_GATE
from operator_runtime.controllers.rayjob.run import JobCaches
from operator_runtime.controllers.rayservice.run import ServiceCaches
from operator_runtime.render import (
    OPERATOR_PERMISSIONS,
    USE_KUBERNETES_PROXY,
    ClusterRoleParams,
    Permission,
    build_operator_cluster_role,
)
from operator_runtime.render.permission import batch_scheduler_flag
from operator_runtime.render.rbac import turned_on_by
from operator_runtime.runtime.kinds import ResourceKind


def _triples(permissions: tuple[Permission, ...] | list[Permission]) -> set[tuple[str, str, str]]:
    return {(p.group, r, v) for p in permissions for r in p.resources for v in p.verbs}


def _conditional(
    permissions: tuple[Permission, ...] | list[Permission],
) -> set[tuple[str, str, str, str]]:
    return {(p.group, r, v, p.only_with) for p in permissions for r in p.resources for v in p.verbs}


DECLARED = {
    "raycluster": PERMISSIONS,
    "rayjob": rayjob.PERMISSIONS,
    "raycronjob": raycronjob.PERMISSIONS,
    "rayservice": rayservice.PERMISSIONS,
    "networkpolicy": networkpolicy.PERMISSIONS,
    "raycluster-mtls": mtls.PERMISSIONS,
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
    table = [p for p in OPERATOR_PERMISSIONS if p.controller == controller]
    assert _conditional(table) == _conditional(DECLARED[controller])


def test_the_committed_table_is_generated_from_the_declarations() -> None:
    """Fails when a ``need()`` changes and the table was not regenerated (run
    ``python -m operator_runtime.controllers.permission_table``)."""
    assert permission_table.main(["--check"]) == 0
    assert permission_table.merged(permission_table.declared()) == OPERATOR_PERMISSIONS
    assert [p for p in OPERATOR_PERMISSIONS if p.controller == "manager"] == list(
        permission_table.merged(MANAGER_NEEDS)
    )


def test_check_fails_on_a_stale_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stale = tmp_path / "operator_permissions.py"
    text = permission_table.TABLE_FILE.read_text(encoding="utf-8")
    stale.write_text(text.replace('"pods/resize"', '"pods/rezise"'), encoding="utf-8")
    monkeypatch.setattr(permission_table, "TABLE_FILE", stale)
    assert permission_table.main(["--check"]) == 1
    assert '"pods/resize"' in capsys.readouterr().out
    assert permission_table.main([]) == 0
    generated = permission_table.render(permission_table.merged(permission_table.declared()))
    assert stale.read_text(encoding="utf-8") == generated


def test_a_new_need_reaches_the_table_with_its_condition() -> None:
    need = declarer("rayjob")
    extra = need("", "configmaps", ("get",), "why", USE_KUBERNETES_PROXY)
    table = permission_table.merged((*permission_table.declared(), extra))
    assert extra in table
    assert permission_table.render(table) != permission_table.TABLE_FILE.read_text(encoding="utf-8")


VOLCANO = batch_scheduler_flag("volcano")
PLUGINS = batch_scheduler_flag("scheduler-plugins")


def test_needs_of_a_gate_or_flag_say_which() -> None:
    """The conditions travel with the declarations: the whole RayCronJob and
    NetworkPolicy and mTLS controllers, the Gateway API of incremental upgrades, the API
    server proxy, each batch scheduler's PodGroups (the KubernetesWAS gate's Workloads
    too) and the RayCluster controller's reads of mTLS certificates."""
    assert all(p.only_with == CRON_GATE for p in raycronjob.PERMISSIONS)
    assert all(p.only_with == NETWORK_POLICY_GATE for p in networkpolicy.PERMISSIONS)
    assert all(p.only_with == "RayClusterMTLS" for p in mtls.PERMISSIONS)
    conditional = {
        (p.controller, p.resources, p.only_with)
        for p in OPERATOR_PERMISSIONS
        if p.only_with and p.controller not in ("raycronjob", "networkpolicy", "raycluster-mtls")
    }
    assert conditional == {
        ("rayjob", ("services/proxy",), USE_KUBERNETES_PROXY),
        ("rayservice", ("services/proxy",), USE_KUBERNETES_PROXY),
        ("rayservice", ("pods/proxy",), USE_KUBERNETES_PROXY),
        ("rayservice", ("gateways",), "RayServiceIncrementalUpgrade"),
        ("rayservice", ("httproutes",), "RayServiceIncrementalUpgrade"),
        ("raycluster", ("podgroups",), VOLCANO),
        ("raycluster", ("podgroups",), PLUGINS),
        ("rayjob", ("podgroups",), VOLCANO),
        ("raycluster", ("podgroups",), "KubernetesWAS"),
        ("raycluster", ("workloads",), "KubernetesWAS"),
        ("raycluster", ("certificates",), "RayClusterMTLS"),
        ("raycluster", ("secrets",), "RayClusterMTLS"),
    }
    assert {p.only_with for p in OPERATOR_PERMISSIONS} <= {
        "", USE_KUBERNETES_PROXY, VOLCANO, PLUGINS, *GATES
    }  # fmt: skip


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
        (networkpolicy.PERMISSIONS, networkpolicy.WATCHED),
        (mtls.PERMISSIONS, mtls.WATCHED),
    ],
    ids=["raycluster", "rayjob", "raycronjob", "rayservice", "networkpolicy", "raycluster-mtls"],
)
def test_every_watched_kind_is_listable_and_watchable(
    declared: tuple[Permission, ...], watched: dict[str, tuple[ResourceKind, str | None]]
) -> None:
    triples = _triples(declared)
    for kind, _selector in watched.values():
        assert {(kind.group, kind.plural, "list"), (kind.group, kind.plural, "watch")} <= triples


def test_the_caches_are_the_watched_kinds() -> None:
    # Plus the PodGroups, cached only with a batch scheduler that has them, and the
    # KubernetesWAS gate's Workloads and PodGroups.
    assert [f.name for f in dataclasses.fields(ClusterCaches)] == [
        *WATCHED, "pod_groups", "workload_scheduling"
    ]  # fmt: skip
    assert [f.name for f in dataclasses.fields(JobCaches)] == [*rayjob.WATCHED, "pod_groups"]
    assert [f.name for f in dataclasses.fields(raycronjob.CronCaches)] == list(raycronjob.WATCHED)
    assert [f.name for f in dataclasses.fields(ServiceCaches)] == list(rayservice.WATCHED)
    assert [f.name for f in dataclasses.fields(networkpolicy.PolicyCaches)] == list(
        networkpolicy.WATCHED
    )
    assert [f.name for f in dataclasses.fields(mtls.TLSCaches)] == list(mtls.WATCHED)


def test_steps_run_in_kuberays_order() -> None:
    assert [step.__name__ for step in GATE_STEPS] == [
        "skip_unmanaged",
        "validate",
        "refuse_without_cert_manager",
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


def test_the_workload_api_is_granted_only_with_its_gate() -> None:
    """The KubernetesWAS gate's Workloads and PodGroups of ``scheduling.k8s.io``: in the
    role of an operator started with the gate, not in one started without."""

    def granted(gates: FeatureGates) -> set[tuple[str, str]]:
        params = ClusterRoleParams(turned_on=turned_on_by(gates))
        rules = build_operator_cluster_role(params=params)["rules"]
        return {(g, r) for rule in rules for g in rule["apiGroups"] for r in rule["resources"]}

    workload_api = {("scheduling.k8s.io", "workloads"), ("scheduling.k8s.io", "podgroups")}
    assert workload_api <= granted(FeatureGates(kubernetes_was=True))
    assert not workload_api & granted(FeatureGates())
