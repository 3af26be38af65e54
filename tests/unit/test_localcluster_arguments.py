"""A LocalCluster's Kubernetes version, feature gates and runtime config reach the
components' command lines (the real servers' answers are in
tests/integration/kubernetes136 and tests/integration/test_localcluster.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hack.localcluster import build, versions
from hack.localcluster.cluster import LocalCluster

GATED = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")


def _cluster(tmp_path: Path, **fields: object) -> LocalCluster:
    kubernetes = str(fields.get("kubernetes", versions.KUBERNETES))
    return LocalCluster(state_dir=tmp_path, tools=build.toolset(kubernetes), **fields)  # type: ignore[arg-type]


def _flags(cluster: LocalCluster, component: str, name: str) -> list[str]:
    return [arg for arg in cluster._arguments(component) if arg.startswith(f"{name}=")]


def test_the_default_is_the_first_version_with_its_own_gates(tmp_path: Path) -> None:
    cluster = _cluster(tmp_path)
    assert cluster.kubernetes == versions.KUBERNETES
    for component in GATED:
        assert _flags(cluster, component, "--feature-gates") == []
    assert _flags(cluster, "kube-apiserver", "--runtime-config") == []


def test_gates_go_to_the_three_servers_and_runtime_config_to_the_api_server(
    tmp_path: Path,
) -> None:
    cluster = _cluster(
        tmp_path, kubernetes=versions.KUBERNETES_1_36,
        feature_gates={"GenericWorkload": True, "GangScheduling": True, "Other": False},
        runtime_config={"scheduling.k8s.io/v1alpha2": True},
    )  # fmt: skip
    gates = "--feature-gates=GangScheduling=true,GenericWorkload=true,Other=false"
    for component in GATED:
        assert _flags(cluster, component, "--feature-gates") == [gates], component
    assert _flags(cluster, "kube-apiserver", "--runtime-config") == [
        "--runtime-config=scheduling.k8s.io/v1alpha2=true"
    ]
    for component in ("kube-controller-manager", "kube-scheduler", "etcd", "kwok"):
        assert _flags(cluster, component, "--runtime-config") == [], component


def test_a_toolset_of_another_version_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"is Kubernetes v1\.34\.4, not the v1\.36\.3"):
        LocalCluster(state_dir=tmp_path, tools=build.toolset(), kubernetes=versions.KUBERNETES_1_36)


def test_an_unpinned_version_is_refused() -> None:
    with pytest.raises(ValueError, match=r"no pinned Kubernetes 'v1\.99\.0'"):
        build.toolset("v1.99.0")


def test_the_state_file_keeps_the_version_and_its_settings(tmp_path: Path) -> None:
    """``python -m hack.localcluster down`` (``load``) restarts a component with the same
    command line ``up`` gave it."""
    cluster = _cluster(
        tmp_path, kubernetes=versions.KUBERNETES_1_36, feature_gates={"GenericWorkload": True},
        runtime_config={"scheduling.k8s.io/v1alpha2": True},
    )  # fmt: skip
    cluster._save_state()
    saved = json.loads((tmp_path / "state.json").read_text())
    assert saved["kubernetes"] == versions.KUBERNETES_1_36
    loaded = LocalCluster.load(tmp_path)
    assert (loaded.kubernetes, loaded.feature_gates, loaded.runtime_config) == (
        cluster.kubernetes, cluster.feature_gates, cluster.runtime_config,
    )  # fmt: skip
    assert loaded.tools.root == cluster.tools.root
