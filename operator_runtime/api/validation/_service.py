"""Rules for a RayService: the initializing-timeout annotation and the spec."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Final, get_args

from operator_runtime.api.errors import ErrorCode as C
from operator_runtime.api.errors import Violation
from operator_runtime.api.features import FeatureGates
from operator_runtime.api.rayservice import (
    INCREMENTAL_UPGRADE,
    RayServiceSpec,
    RayServiceUpgradeType,
)
from operator_runtime.api.useryaml import UserYamlError, load_yaml
from operator_runtime.api.validation import _names
from operator_runtime.api.validation._cluster import cluster_spec_violations
from operator_runtime.api.validation._cluster_features import (
    autoscaling_enabled,
    k8s_token_auth_enabled,
)
from operator_runtime.api.validation._pod import metadata_name
from operator_runtime.api.validation._refs import name_violations
from operator_runtime.api.validation._syntax import parse_go_duration, parse_go_int

UPGRADE_TYPES: Final[tuple[str, ...]] = get_args(RayServiceUpgradeType)


def timeout_annotation_violations(annotations: Mapping[str, str]) -> Iterator[Violation]:
    raw = annotations.get(_names.INITIALIZING_TIMEOUT_ANNOTATION, "")
    if not raw:
        return
    # A Go duration is tried first, then whole seconds, as KubeRay does.
    seconds = parse_go_duration(raw)
    if seconds is None:
        whole = parse_go_int(raw)
        seconds = None if whole is None else float(whole)
    if seconds is None or seconds <= 0:
        yield Violation(
            C.RAYSERVICE_INVALID_INITIALIZING_TIMEOUT,
            f"metadata.annotations[{_names.INITIALIZING_TIMEOUT_ANNOTATION}]",
            f"{raw!r} is not a positive duration",
            "use a Go duration such as 30m or 1h, or a positive number of seconds",
        )


def service_spec_violations(
    spec: RayServiceSpec, annotations: Mapping[str, str], gates: FeatureGates
) -> Iterator[Violation]:
    cluster = spec.ray_cluster_config
    if k8s_token_auth_enabled(cluster):
        yield Violation(
            C.RAYSERVICE_K8S_TOKEN_AUTH,
            "spec.rayClusterConfig.authOptions.enableK8sTokenAuth",
            "Kubernetes token authentication is not supported for RayService",
            "turn enableK8sTokenAuth off (use mode: token)",
        )
    yield from cluster_spec_violations(cluster, annotations, gates, "spec.rayClusterConfig")
    if metadata_name(cluster.head_group_spec.head_service):
        yield Violation(
            C.RAYSERVICE_HEAD_SERVICE_NAME,
            "spec.rayClusterConfig.headGroupSpec.headService.metadata.name",
            "the head Service of a RayService's cluster cannot be named",
            "remove metadata.name; the operator names it per cluster",
        )
    strategy = spec.upgrade_strategy
    kind = strategy.type if strategy is not None else None
    if kind is not None and kind not in UPGRADE_TYPES:
        yield Violation(
            C.RAYSERVICE_UPGRADE_TYPE,
            "spec.upgradeStrategy.type",
            f"unknown upgrade strategy type {kind!r}",
            f"use one of {', '.join(UPGRADE_TYPES)}",
        )
    if gates.ray_service_incremental_upgrade and kind == INCREMENTAL_UPGRADE:
        yield from _incremental(spec)
    yield from name_violations(
        "spec.serveService.metadata.name", metadata_name(spec.serve_service), "Service"
    )
    yield from _serve_config(spec)


def _serve_config(spec: RayServiceSpec) -> Iterator[Violation]:
    """Ours, not KubeRay's: ``serveConfigV2`` past the bounds of user YAML (an alias
    bomb) is refused here, once, instead of on every PUT. Syntax errors stay with the
    PUT (KubeRay reports them when it unmarshals the config)."""
    try:
        load_yaml(spec.serve_config_v2 or "")
    except UserYamlError as exc:
        if exc.code is C.YAML_TOO_LARGE:
            yield Violation(
                C.YAML_TOO_LARGE,
                "spec.serveConfigV2",
                f"serveConfigV2 is refused: {exc}",
                "write the Serve config out without so many aliases or bytes",
            )


def _incremental(spec: RayServiceSpec) -> Iterator[Violation]:
    path = "spec.upgradeStrategy.clusterUpgradeOptions"
    if not autoscaling_enabled(spec.ray_cluster_config):
        yield Violation(
            C.RAYSERVICE_INCREMENTAL_NEEDS_AUTOSCALING,
            "spec.rayClusterConfig.enableInTreeAutoscaling",
            "NewClusterWithIncrementalUpgrade needs the Ray autoscaler",
            "set rayClusterConfig.enableInTreeAutoscaling: true",
        )
    options = spec.upgrade_strategy.cluster_upgrade_options if spec.upgrade_strategy else None
    if options is None:
        yield Violation(
            C.RAYSERVICE_INCREMENTAL_NO_OPTIONS,
            path,
            "NewClusterWithIncrementalUpgrade needs clusterUpgradeOptions",
            "set stepSizePercent, intervalSeconds and gatewayClassName",
        )
        return
    surge = 100 if options.max_surge_percent is None else options.max_surge_percent
    if not 0 <= surge <= 100:
        yield Violation(
            C.RAYSERVICE_MAX_SURGE_RANGE,
            f"{path}.maxSurgePercent",
            f"maxSurgePercent is {surge}",
            "use a value from 0 to 100",
        )
    step = options.step_size_percent
    if not 0 <= step <= 100:
        yield Violation(
            C.RAYSERVICE_STEP_SIZE_RANGE,
            f"{path}.stepSizePercent",
            f"stepSizePercent is {step}",
            "use a value from 0 to 100",
        )
    elif step > surge:
        yield Violation(
            C.RAYSERVICE_STEP_SIZE_ABOVE_MAX_SURGE,
            f"{path}.stepSizePercent",
            f"stepSizePercent {step} is greater than maxSurgePercent {surge}",
            "set stepSizePercent <= maxSurgePercent",
        )
    if options.interval_seconds <= 0:
        yield Violation(
            C.RAYSERVICE_NONPOSITIVE_INTERVAL,
            f"{path}.intervalSeconds",
            f"intervalSeconds is {options.interval_seconds}",
            "set it to 1 or more",
        )
    if not options.gateway_class_name:
        yield Violation(
            C.RAYSERVICE_NO_GATEWAY_CLASS,
            f"{path}.gatewayClassName",
            "gatewayClassName is empty",
            "name the GatewayClass installed in the cluster",
        )
