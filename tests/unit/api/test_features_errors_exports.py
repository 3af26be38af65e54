"""Feature-gate parsing, the error objects, and the package's public surface."""

from __future__ import annotations

import dataclasses
import types
from typing import Any

import pytest

import operator_runtime.api as api_pkg
from operator_runtime.api import (
    ErrorCode,
    FeatureGateError,
    FeatureGates,
    InvalidMetadataError,
    InvalidObjectError,
    InvalidSpecError,
    RayApiError,
    RayCluster,
    ValidationScope,
    Violation,
    validate_raycluster,
)
from operator_runtime.api.features import GATES


def test_defaults_match_kuberay_maturity() -> None:
    gates = FeatureGates()
    for name, (_attr, maturity) in GATES.items():
        assert gates.enabled(name) is (maturity == "Beta"), name
    assert len(GATES) == len(dataclasses.fields(FeatureGates)) == 11


def test_parse_sets_named_gates() -> None:
    gates = FeatureGates.parse("RayCronJob=true, RayJobDeletionPolicy=false,")
    assert gates.ray_cron_job and not gates.ray_job_deletion_policy
    assert gates.ray_service_incremental_upgrade  # untouched default
    assert FeatureGates.parse("") == FeatureGates()
    assert FeatureGates.parse(gates.as_flag()) == gates


def test_all_alpha_then_explicit_override() -> None:
    gates = FeatureGates.parse("AllAlpha=true,KubernetesWAS=false,AllBeta=false")
    assert gates.ray_cron_job and gates.ray_cluster_mtls and not gates.kubernetes_was
    assert not gates.ray_cluster_status_conditions


@pytest.mark.parametrize(
    ("flag", "fragment"),
    [
        ("RayCronjob=true", "unknown feature gate 'RayCronjob'"),
        ("RayCronJob", "Name=true"),
        ("RayCronJob=maybe", "Name=true"),
    ],
)
def test_bad_flags_are_refused_clearly(flag: str, fragment: str) -> None:
    with pytest.raises(FeatureGateError, match=fragment) as caught:
        FeatureGates.parse(flag)
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, RayApiError)


def test_enabled_refuses_unknown_names() -> None:
    with pytest.raises(FeatureGateError):
        FeatureGates().enabled("NoSuchGate")


def test_error_message_names_object_path_fix_and_code(api: Any) -> None:
    obj = api.base("RayCluster")
    obj["spec"]["workerGroupSpecs"][0].update(minReplicas=4, maxReplicas=2)
    with pytest.raises(InvalidSpecError) as caught:
        validate_raycluster(RayCluster.model_validate(obj))
    assert str(caught.value) == (
        "RayCluster default/demo: spec.workerGroupSpecs[0].minReplicas: worker group workers "
        "has minReplicas 4 greater than maxReplicas 2; set minReplicas <= maxReplicas "
        "[RAYCLUSTER_MIN_GT_MAX]"
    )
    assert caught.value.scope is ValidationScope.SPEC
    assert caught.value.event_reason == "InvalidRayClusterSpec"


def test_error_without_namespace_or_name() -> None:
    violation = Violation(ErrorCode.RAYCLUSTER_NAME_NOT_DNS1035, "metadata.name", "bad", "fix")
    error = InvalidMetadataError(violation, kind="RayCluster", namespace="", name="")
    assert error.object_ref == "RayCluster <unnamed>"
    assert error.event_reason == "InvalidRayClusterMetadata"
    assert isinstance(error, InvalidObjectError) and isinstance(error, ValueError)


def test_error_codes_are_stable_identifiers() -> None:
    for code in ErrorCode:
        assert code.value == code.name
        assert code.name.split("_")[0] in {
            "RAYCLUSTER", "RAYJOB", "RAYSERVICE", "RAYCRONJOB", "FIELD", "KIND", "YAML",
        }  # fmt: skip


def test_all_is_sorted_complete_and_importable() -> None:
    exported = api_pkg.__all__
    assert exported == sorted(exported, key=lambda n: (not n.isupper(), n[:1].islower(), n))
    assert len(set(exported)) == len(exported)
    for name in exported:
        assert hasattr(api_pkg, name), name
    public = {n for n in vars(api_pkg) if not n.startswith("_")}
    # Submodules become package attributes once imported; they are not exported names.
    modules = {n for n, v in vars(api_pkg).items() if isinstance(v, types.ModuleType)}
    assert public - set(exported) - modules == set()
