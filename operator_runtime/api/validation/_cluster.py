"""Rules for a RayClusterSpec (``ValidateRayClusterSpec`` in KubeRay), in KubeRay's order.

The same rules run on a RayCluster's ``spec``, a RayJob's ``spec.rayClusterSpec`` and a
RayService's ``spec.rayClusterConfig``; ``prefix`` is where the spec sits.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from operator_runtime.api._base import JSONObject
from operator_runtime.api.clusteroptions import GcsFaultToleranceOptions
from operator_runtime.api.errors import ErrorCode as C
from operator_runtime.api.errors import Violation
from operator_runtime.api.features import FeatureGates
from operator_runtime.api.raycluster import RayClusterSpec, WorkerGroupSpec
from operator_runtime.api.validation import _cluster_features, _names
from operator_runtime.api.validation._cluster_features import (
    autoscaler_v2_enabled,
    autoscaler_v2_env_on,
    autoscaling_enabled,
)
from operator_runtime.api.validation._managed import managed_env, managed_mounts
from operator_runtime.api.validation._pod import (
    containers,
    env_of,
    find_env,
    mounts_of,
    name_of,
    volumes,
)
from operator_runtime.api.validation._refs import cluster_reference_violations
from operator_runtime.api.validation._syntax import label_value_error, qualified_name_error

_RESOURCE_PARAMS = ("num-cpus", "num-gpus", "memory", "resources")


def cluster_spec_violations(
    spec: RayClusterSpec, annotations: Mapping[str, str], gates: FeatureGates, prefix: str
) -> Iterator[Violation]:
    """Every broken rule, lazily and in KubeRay's order (the first is what KubeRay reports)."""
    head_path = f"{prefix}.headGroupSpec"
    head_containers = containers(spec.head_group_spec.template)
    if not head_containers:
        yield Violation(
            C.RAYCLUSTER_HEAD_NO_CONTAINER,
            f"{head_path}.template.spec.containers",
            "the head pod template has no container",
            "add the Ray container as containers[0]",
        )
        return  # every later rule reads the head's Ray container
    head = head_containers[0]
    head_c = f"{head_path}.template.spec.containers[0]"
    group = spec.head_group_spec
    yield from _group_params(head_path, "head", group.ray_start_params, group.resources)
    yield from _group_labels(head_path, "head", group.ray_start_params, group.labels)
    yield from _worker_groups(spec, head, prefix)
    yield from _fault_tolerance(spec, annotations, gates, head, head_c, prefix)
    yield from _cluster_features.autoscaling_violations(spec, gates, head, head_c, prefix)
    yield from _cluster_features.feature_violations(spec, gates, prefix)
    yield from cluster_reference_violations(spec, prefix)


def _group_params(
    path: str, label: str, params: Mapping[str, str] | None, resources: Mapping[str, str] | None
) -> Iterator[Violation]:
    set_params = [k for k in _RESOURCE_PARAMS if (params or {}).get(k)]
    if set_params and resources:
        yield Violation(
            C.RAYCLUSTER_RESOURCES_CONFLICT,
            f"{path}.resources",
            f"{label} group sets resources and rayStartParams {', '.join(set_params)}",
            "declare Ray resources either in resources or in rayStartParams, not both",
        )


def _group_labels(
    path: str, label: str, params: Mapping[str, str] | None, labels: Mapping[str, str] | None
) -> Iterator[Violation]:
    if "labels" in (params or {}):
        yield Violation(
            C.RAYCLUSTER_LABELS_IN_RAY_START_PARAMS,
            f"{path}.rayStartParams[labels]",
            f"rayStartParams 'labels' is not supported for the {label} group",
            "move the Ray node labels to the group's labels field",
        )
    for key, value in sorted((labels or {}).items()):
        reason = qualified_name_error(key) or label_value_error(value)
        if reason:
            yield Violation(
                C.RAYCLUSTER_INVALID_LABEL,
                f"{path}.labels[{key}]",
                # The key only: the value ends up in an Event and may be anything.
                f"invalid label {key} in the {label} group: {reason}",
                "use Kubernetes label syntax for keys and values",
            )


def _worker_groups(spec: RayClusterSpec, head: JSONObject, prefix: str) -> Iterator[Violation]:
    autoscaling = autoscaling_enabled(spec)
    seen: set[str] = set()
    for i, wg in enumerate(spec.worker_group_specs or ()):
        path = f"{prefix}.workerGroupSpecs[{i}]"
        # The webhook's rule: group names identify pods, so they must be unique.
        if wg.group_name in seen:
            yield Violation(
                C.RAYCLUSTER_DUPLICATE_GROUP_NAME,
                f"{path}.groupName",
                f"worker group name {wg.group_name!r} is used twice",
                "give every worker group a unique groupName",
            )
        seen.add(wg.group_name)
        if not containers(wg.template):
            yield Violation(
                C.RAYCLUSTER_WORKER_NO_CONTAINER,
                f"{path}.template.spec.containers",
                f"worker group {wg.group_name} has no container",
                "add the Ray container as containers[0]",
            )
        yield from _replicas(wg, path, autoscaling)
        yield from _group_params(path, wg.group_name, wg.ray_start_params, wg.resources)
        yield from _group_labels(path, wg.group_name, wg.ray_start_params, wg.labels)
        yield from _idle_timeout_and_priority(spec, wg, head, path)


def _replicas(wg: WorkerGroupSpec, path: str, autoscaling: bool) -> Iterator[Violation]:
    low, high = wg.min_replicas, wg.max_replicas
    if not autoscaling and (low is None or high is None):
        missing = "minReplicas" if low is None else "maxReplicas"
        yield Violation(
            C.RAYCLUSTER_REPLICAS_UNSET,
            f"{path}.{missing}",
            f"worker group {wg.group_name} needs minReplicas and maxReplicas without autoscaling",
            "set both, or enable enableInTreeAutoscaling",
        )
    for field, value in (("minReplicas", low), ("maxReplicas", high)):
        if value is not None and value < 0:
            yield Violation(
                C.RAYCLUSTER_NEGATIVE_REPLICAS,
                f"{path}.{field}",
                f"worker group {wg.group_name} has negative {field} {value}",
                f"set {field} to 0 or more",
            )
    if low is not None and high is not None and low > high:
        yield Violation(
            C.RAYCLUSTER_MIN_GT_MAX,
            f"{path}.minReplicas",
            f"worker group {wg.group_name} has minReplicas {low} greater than maxReplicas {high}",
            "set minReplicas <= maxReplicas",
        )


def _idle_timeout_and_priority(
    spec: RayClusterSpec, wg: WorkerGroupSpec, head: JSONObject, path: str
) -> Iterator[Violation]:
    v2 = autoscaler_v2_enabled(spec) or autoscaler_v2_env_on(head)
    if wg.idle_timeout_seconds is not None:
        if wg.idle_timeout_seconds < 0:
            yield Violation(
                C.RAYCLUSTER_NEGATIVE_IDLE_TIMEOUT,
                f"{path}.idleTimeoutSeconds",
                f"worker group {wg.group_name} has idleTimeoutSeconds {wg.idle_timeout_seconds}",
                "set idleTimeoutSeconds to 0 or more",
            )
        elif not v2:
            yield Violation(
                C.RAYCLUSTER_IDLE_TIMEOUT_NEEDS_V2,
                f"{path}.idleTimeoutSeconds",
                f"worker group {wg.group_name} sets idleTimeoutSeconds without autoscaler v2",
                "set spec.autoscalerOptions.version to v2, or remove idleTimeoutSeconds",
            )
    if not wg.priority:
        return
    version_problem = _cluster_features.ray_version_problem(spec.ray_version, (2, 56, 0))
    if version_problem:
        yield Violation(
            C.RAYCLUSTER_PRIORITY_NEEDS_RAY_VERSION,
            f"{path}.priority",
            f"worker group {wg.group_name} sets priority but {version_problem}",
            "set spec.rayVersion to 2.56.0 or later, or remove priority",
        )
    elif not v2:
        yield Violation(
            C.RAYCLUSTER_PRIORITY_NEEDS_V2,
            f"{path}.priority",
            f"worker group {wg.group_name} sets priority {wg.priority} without autoscaler v2",
            "set spec.autoscalerOptions.version to v2, or remove priority",
        )


def _fault_tolerance(
    spec: RayClusterSpec,
    annotations: Mapping[str, str],
    gates: FeatureGates,
    head: JSONObject,
    head_c: str,
    prefix: str,
) -> Iterator[Violation]:
    options = spec.gcs_fault_tolerance_options
    params = spec.head_group_spec.ray_start_params or {}
    env = env_of(head)
    if annotations.get(_names.FT_ENABLED_ANNOTATION) and options is not None:
        yield Violation(
            C.RAYCLUSTER_FT_ANNOTATION_AND_OPTIONS,
            f"metadata.annotations[{_names.FT_ENABLED_ANNOTATION}]",
            "both the ft-enabled annotation and gcsFaultToleranceOptions are set",
            "remove the annotation and keep gcsFaultToleranceOptions",
        )
    ft_on = annotations.get(_names.FT_ENABLED_ANNOTATION, "").lower() == "true" or options
    redis_address = find_env(env, _names.RAY_REDIS_ADDRESS)
    if not ft_on and redis_address is not None:
        yield Violation(
            C.RAYCLUSTER_REDIS_ADDRESS_WITHOUT_FT,
            f"{head_c}.env[{redis_address[0]}]",
            "RAY_REDIS_ADDRESS is set but GCS fault tolerance is not configured",
            "set gcsFaultToleranceOptions.redisAddress instead of the env var",
        )
    if options is not None:
        yield from _ft_options(spec, options, annotations, gates, head, head_c, prefix)
    if params.get("redis-username") or find_env(env, _names.REDIS_USERNAME) is not None:
        at_param = bool(params.get("redis-username"))
        yield Violation(
            C.RAYCLUSTER_REDIS_USERNAME_OUTSIDE_OPTIONS,
            f"{prefix}.headGroupSpec.rayStartParams[redis-username]"
            if at_param
            else f"{head_c}.env",
            "the Redis username is set in rayStartParams or the REDIS_USERNAME env var",
            "use gcsFaultToleranceOptions.redisUsername",
        )


def _ft_options(
    spec: RayClusterSpec,
    options: GcsFaultToleranceOptions,
    annotations: Mapping[str, str],
    gates: FeatureGates,
    head: JSONObject,
    head_c: str,
    prefix: str,
) -> Iterator[Violation]:
    ft = f"{prefix}.gcsFaultToleranceOptions"
    env = env_of(head)
    if (spec.head_group_spec.ray_start_params or {}).get("redis-password"):
        yield Violation(
            C.RAYCLUSTER_FT_REDIS_PASSWORD_PARAM,
            f"{prefix}.headGroupSpec.rayStartParams[redis-password]",
            "redis-password is set in rayStartParams with gcsFaultToleranceOptions",
            "use gcsFaultToleranceOptions.redisPassword",
        )
    for var, code, fix in (
        (_names.REDIS_PASSWORD, C.RAYCLUSTER_FT_REDIS_PASSWORD_ENV, "redisPassword"),
        (_names.RAY_REDIS_ADDRESS, C.RAYCLUSTER_FT_REDIS_ADDRESS_ENV, "redisAddress"),
    ):
        found = find_env(env, var)
        if found is not None:
            yield Violation(
                code,
                f"{head_c}.env[{found[0]}]",
                f"the head sets {var} with gcsFaultToleranceOptions",
                f"use gcsFaultToleranceOptions.{fix}",
            )
    if annotations.get(_names.EXTERNAL_STORAGE_NS_ANNOTATION):
        yield Violation(
            C.RAYCLUSTER_FT_STORAGE_NAMESPACE_ANNOTATION,
            f"metadata.annotations[{_names.EXTERNAL_STORAGE_NS_ANNOTATION}]",
            "the external-storage-namespace annotation is set with gcsFaultToleranceOptions",
            "use gcsFaultToleranceOptions.externalStorageNamespace",
        )
    if options.backend != "rocksdb":
        if options.storage is not None:
            yield Violation(
                C.RAYCLUSTER_REDIS_STORAGE_SET,
                f"{ft}.storage",
                "storage only applies to the rocksdb backend",
                "remove storage or set backend: rocksdb",
            )
        return
    if not gates.gcs_fault_tolerance_embedded_storage:
        yield Violation(
            C.RAYCLUSTER_ROCKSDB_GATE_DISABLED,
            f"{ft}.backend",
            "the rocksdb backend needs the GCSFaultToleranceEmbeddedStorage feature gate",
            "enable the gate on the operator or use backend: redis",
        )
    for field, value in (
        ("redisAddress", options.redis_address),
        ("redisUsername", options.redis_username),
        ("redisPassword", options.redis_password),
        ("externalStorageNamespace", options.external_storage_namespace),
    ):
        if value:
            yield Violation(
                C.RAYCLUSTER_ROCKSDB_REDIS_FIELD,
                f"{ft}.{field}",
                f"{field} is a Redis setting but the backend is rocksdb",
                f"remove {field}",
            )
    storage = options.storage
    managed = storage is not None and (
        storage.size is not None or storage.storage_class_name is not None or storage.access_modes
    )
    if storage is not None and storage.claim_name and managed:
        yield Violation(
            C.RAYCLUSTER_ROCKSDB_CLAIM_CONFLICT,
            f"{ft}.storage.claimName",
            "claimName is combined with size, storageClassName or accessModes",
            "either name an existing claim or describe a managed one, not both",
        )
    yield from managed_env(
        env,
        (_names.RAY_GCS_STORAGE, _names.RAY_GCS_STORAGE_PATH),
        C.RAYCLUSTER_ROCKSDB_MANAGED_ENV,
        head_c,
        when=" for the rocksdb backend",
    )
    yield from managed_mounts(
        mounts_of(head),
        _names.GCS_STORAGE_VOLUME,
        _names.GCS_MOUNT,
        "rocksdb volume",
        C.RAYCLUSTER_ROCKSDB_MANAGED_VOLUME,
        head_c,
    )
    for i, volume in enumerate(volumes(spec.head_group_spec.template)):
        if name_of(volume) == _names.GCS_STORAGE_VOLUME:
            yield Violation(
                C.RAYCLUSTER_ROCKSDB_MANAGED_VOLUME,
                f"{prefix}.headGroupSpec.template.spec.volumes[{i}]",
                f"a volume named {_names.GCS_STORAGE_VOLUME} clashes with the operator's",
                "rename or remove this volume",
            )
