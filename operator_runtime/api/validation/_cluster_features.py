"""Rules for the optional RayCluster features: autoscaling, history server,
authentication, network policy and TLS (the tail of KubeRay's ``ValidateRayClusterSpec``,
same order)."""

from __future__ import annotations

from collections.abc import Iterator

from operator_runtime.api._base import JSONObject
from operator_runtime.api.clusteroptions import CollectorOptions, NetworkPolicyRules
from operator_runtime.api.errors import ErrorCode as C
from operator_runtime.api.errors import Violation
from operator_runtime.api.features import FeatureGates
from operator_runtime.api.raycluster import RayClusterSpec
from operator_runtime.api.validation import _names
from operator_runtime.api.validation._managed import gate_disabled, managed_env, managed_mounts
from operator_runtime.api.validation._pod import (
    containers,
    env_has_value,
    env_of,
    env_value,
    find_env,
    mounts_of,
    name_of,
    restart_policy,
)
from operator_runtime.api.validation._syntax import (
    is_dns1123_label,
    parse_generic_version,
    version_less_than,
)


def autoscaling_enabled(spec: RayClusterSpec | None) -> bool:
    return spec is not None and bool(spec.enable_in_tree_autoscaling)


def autoscaler_v2_enabled(spec: RayClusterSpec) -> bool:
    options = spec.autoscaler_options
    return options is not None and options.version == "v2"


def autoscaler_v2_env_on(head: JSONObject) -> bool:
    """The head's Ray container turns autoscaler v2 on by env var."""
    found = find_env(env_of(head), _names.RAY_ENABLE_AUTOSCALER_V2)
    return found is not None and env_value(found[1]) in ("1", "true")


def group_templates(spec: RayClusterSpec, prefix: str) -> list[tuple[str, str, JSONObject]]:
    """``(path, label, pod template)`` of the head group, then of each worker group."""
    return [(f"{prefix}.headGroupSpec", "head", spec.head_group_spec.template)] + [
        (f"{prefix}.workerGroupSpecs[{i}]", f"worker group {wg.group_name}", wg.template)
        for i, wg in enumerate(spec.worker_group_specs or ())
    ]


def k8s_token_auth_enabled(spec: RayClusterSpec) -> bool:
    return spec.auth_options is not None and bool(spec.auth_options.enable_k8s_token_auth)


def ray_version_problem(ray_version: str | None, minimum: tuple[int, ...]) -> str | None:
    """Why ``spec.rayVersion`` does not reach ``minimum``, or None."""
    wanted = ".".join(map(str, minimum))
    if not ray_version:
        return f"spec.rayVersion is not set (Ray {wanted} or later is required)"
    parsed = parse_generic_version(ray_version)
    if parsed is None:
        return f"spec.rayVersion {ray_version!r} is not a valid version"
    if version_less_than(parsed, minimum):
        return f"spec.rayVersion {ray_version} is older than {wanted}"
    return None


def feature_violations(
    spec: RayClusterSpec, gates: FeatureGates, prefix: str
) -> Iterator[Violation]:
    yield from _history_server(spec, gates, prefix)
    yield from _auth(spec, prefix)
    yield from _network_policy(spec, gates, prefix)
    yield from _tls(spec, gates, prefix)


def _history_server(spec: RayClusterSpec, gates: FeatureGates, prefix: str) -> Iterator[Violation]:
    options = spec.history_server_options
    if options is None:
        return
    path = f"{prefix}.historyServerOptions"
    if not gates.ray_cluster_history_server:
        yield gate_disabled(
            C.RAYCLUSTER_HISTORY_SERVER_GATE_DISABLED, path, "RayClusterHistoryServer"
        )
    if options.collector_options is None:
        yield Violation(
            C.RAYCLUSTER_HISTORY_SERVER_NO_COLLECTOR,
            f"{path}.collectorOptions",
            "historyServerOptions has no collectorOptions",
            "set collectorOptions with an image and STORAGE_BACKEND env",
        )
        return
    yield from _collector(options.collector_options, f"{path}.collectorOptions")
    for group_path, _, template in group_templates(spec, prefix):
        for j, container in enumerate(containers(template)):
            if name_of(container) == _names.COLLECTOR_CONTAINER:
                yield Violation(
                    C.RAYCLUSTER_COLLECTOR_CONTAINER_CLASH,
                    f"{group_path}.template.spec.containers[{j}].name",
                    f"a container is named {_names.COLLECTOR_CONTAINER}, the collector's name",
                    "rename the container",
                )


def _collector(options: CollectorOptions, path: str) -> Iterator[Violation]:
    if not options.image:
        yield Violation(
            C.RAYCLUSTER_COLLECTOR_NO_IMAGE,
            f"{path}.image",
            "the collector has no image",
            "set collectorOptions.image",
        )
    env = options.env or []
    # Later duplicates win, as in a Go map built from the list.
    by_name: dict[str, JSONObject] = {name_of(var): var for var in env}
    for name in _names.COLLECTOR_MANAGED_ENV:
        if name in by_name:
            yield Violation(
                C.RAYCLUSTER_COLLECTOR_MANAGED_ENV,
                f"{path}.env",
                f"collector env sets {name}, which the operator injects",
                f"remove {name}",
            )
    backend = by_name.get(_names.STORAGE_BACKEND)
    if backend is None or not env_value(backend):
        yield Violation(
            C.RAYCLUSTER_COLLECTOR_STORAGE_ENV,
            f"{path}.env",
            f"{_names.STORAGE_BACKEND} is not set to a literal value",
            "set STORAGE_BACKEND (GCS, S3, AZUREBLOB, ALIYUNOSS, ...) in collectorOptions.env",
        )
        return

    def missing(*names: str) -> list[str]:
        return [n for n in names if n not in by_name or not env_has_value(by_name[n])]

    kind = env_value(backend).upper()
    needed: list[str] = []
    if kind in _names.COLLECTOR_BACKEND_ENV:
        needed = missing(*_names.COLLECTOR_BACKEND_ENV[kind])[:1]
    elif kind == "AZUREBLOB":
        mode_var = by_name.get(_names.AZURE_AUTH_MODE)
        mode = env_value(mode_var).strip().lower() if mode_var else ""
        if mode == "connection_string":
            needed = missing(_names.AZURE_CONNECTION_STRING)
        elif mode in ("workload_identity", "default"):
            needed = missing(_names.AZURE_ACCOUNT_URL)
        elif len(missing(_names.AZURE_CONNECTION_STRING, _names.AZURE_ACCOUNT_URL)) == 2:
            needed = [f"{_names.AZURE_CONNECTION_STRING} or {_names.AZURE_ACCOUNT_URL}"]
    if needed:
        yield Violation(
            C.RAYCLUSTER_COLLECTOR_STORAGE_ENV,
            f"{path}.env",
            f"{needed[0]} must be set when {_names.STORAGE_BACKEND} is {kind}",
            f"add {needed[0]} to collectorOptions.env",
        )


def _auth(spec: RayClusterSpec, prefix: str) -> Iterator[Violation]:
    auth = spec.auth_options
    if auth is None:
        return
    path = f"{prefix}.authOptions"
    k8s_auth = bool(auth.enable_k8s_token_auth)
    if auth.mode != "token":
        if k8s_auth:
            yield Violation(
                C.RAYCLUSTER_K8S_AUTH_WITHOUT_TOKEN_MODE,
                f"{path}.enableK8sTokenAuth",
                "enableK8sTokenAuth is on but authOptions.mode is not token",
                "set authOptions.mode: token",
            )
        return
    problem = ray_version_problem(spec.ray_version, (2, 52, 0))
    if problem:
        yield Violation(
            C.RAYCLUSTER_AUTH_RAY_VERSION,
            f"{prefix}.rayVersion",
            f"token authentication needs Ray 2.52.0+ but {problem}",
            "set spec.rayVersion to the image's Ray version, 2.52.0 or later",
        )
        return
    if not k8s_auth:
        return
    problem = ray_version_problem(spec.ray_version, (2, 55, 0))
    if problem:
        yield Violation(
            C.RAYCLUSTER_K8S_AUTH_RAY_VERSION,
            f"{prefix}.rayVersion",
            f"Kubernetes token authentication needs Ray 2.55.0+ but {problem}",
            "use Ray 2.55.0 or later, or turn enableK8sTokenAuth off",
        )
    if auth.secret_name:
        yield Violation(
            C.RAYCLUSTER_K8S_AUTH_WITH_SECRET,
            f"{path}.secretName",
            "secretName is set together with enableK8sTokenAuth",
            "remove secretName or turn enableK8sTokenAuth off",
        )


def _rules_unused(rules: NetworkPolicyRules | None, mode: str, path: str) -> Iterator[Violation]:
    if rules is None:
        return
    if mode == "DenyAllEgress" and rules.ingress_rules:
        yield Violation(
            C.RAYCLUSTER_NETWORK_POLICY_RULES_UNUSED,
            f"{path}.ingressRules",
            "ingressRules have no effect: mode DenyAllEgress leaves ingress open",
            "remove ingressRules or use mode DenyAll / DenyAllIngress",
        )
    if mode == "DenyAllIngress" and rules.egress_rules:
        yield Violation(
            C.RAYCLUSTER_NETWORK_POLICY_RULES_UNUSED,
            f"{path}.egressRules",
            "egressRules have no effect: mode DenyAllIngress leaves egress open",
            "remove egressRules or use mode DenyAll / DenyAllEgress",
        )


def _network_policy(spec: RayClusterSpec, gates: FeatureGates, prefix: str) -> Iterator[Violation]:
    policy = spec.network_policy
    if policy is None:
        return
    path = f"{prefix}.networkPolicy"
    if not gates.ray_cluster_network_policy:
        yield gate_disabled(
            C.RAYCLUSTER_NETWORK_POLICY_GATE_DISABLED, path, "RayClusterNetworkPolicy"
        )
    yield from _rules_unused(policy.head, policy.mode, f"{path}.head")
    yield from _rules_unused(policy.worker, policy.mode, f"{path}.worker")
    names: set[str] = set()
    for i, wg in enumerate(spec.worker_group_specs or ()):
        if not is_dns1123_label(wg.group_name):
            yield Violation(
                C.RAYCLUSTER_NETWORK_POLICY_GROUP_NAME,
                f"{prefix}.workerGroupSpecs[{i}].groupName",
                f"group name {wg.group_name!r} is not a DNS-1123 label; "
                "it becomes part of a NetworkPolicy name",
                "use lowercase letters, digits and '-'",
            )
        names.add(wg.group_name)
    for i, entry in enumerate(policy.worker_groups or ()):
        entry_path = f"{path}.workerGroups[{i}]"
        yield from _rules_unused(entry, policy.mode, entry_path)
        if entry.group_name not in names:
            yield Violation(
                C.RAYCLUSTER_NETWORK_POLICY_UNKNOWN_GROUP,
                f"{entry_path}.groupName",
                f"no worker group is named {entry.group_name!r}",
                "use the groupName of one of spec.workerGroupSpecs",
            )


def _tls(spec: RayClusterSpec, gates: FeatureGates, prefix: str) -> Iterator[Violation]:
    if spec.tls_options is None:
        return
    if not gates.ray_cluster_mtls:
        yield gate_disabled(
            C.RAYCLUSTER_TLS_GATE_DISABLED, f"{prefix}.tlsOptions", "RayClusterMTLS"
        )
        return
    if not spec.tls_options.enabled:
        return
    for group_path, _, template in group_templates(spec, prefix):
        pod_containers = containers(template)
        if pod_containers:
            ray = pod_containers[0]
            path = f"{group_path}.template.spec.containers[0]"
            yield from _tls_clashes(env_of(ray), mounts_of(ray), path)
    if spec.autoscaler_options is not None:
        options = spec.autoscaler_options
        yield from _tls_clashes(
            options.env or [], options.volume_mounts or [], f"{prefix}.autoscalerOptions"
        )


def _tls_clashes(env: list[JSONObject], mounts: list[JSONObject], path: str) -> Iterator[Violation]:
    yield from managed_env(
        env, _names.TLS_ENV_VARS, C.RAYCLUSTER_TLS_MANAGED_ENV, path, when=" when TLS is enabled"
    )
    yield from managed_mounts(
        mounts,
        _names.TLS_VOLUME,
        _names.TLS_MOUNT,
        "TLS mount",
        C.RAYCLUSTER_TLS_MANAGED_MOUNT,
        path,
    )


def autoscaling_violations(
    spec: RayClusterSpec, gates: FeatureGates, head: JSONObject, head_c: str, prefix: str
) -> Iterator[Violation]:
    groups = list(enumerate(spec.worker_group_specs or ()))
    suspended = [(i, wg) for i, wg in groups if wg.suspend]
    if not gates.ray_job_deletion_policy:
        for i, wg in suspended:
            yield Violation(
                C.RAYCLUSTER_SUSPEND_GROUP_GATE_DISABLED,
                f"{prefix}.workerGroupSpecs[{i}].suspend",
                f"worker group {wg.group_name} is suspended",
                "suspending a group needs the RayJobDeletionPolicy feature gate",
            )
    v2_env = find_env(env_of(head), _names.RAY_ENABLE_AUTOSCALER_V2)
    if not autoscaling_enabled(spec):
        if v2_env is not None and autoscaler_v2_env_on(head):
            yield Violation(
                C.RAYCLUSTER_AUTOSCALER_V2_ENV_WITHOUT_AUTOSCALING,
                f"{head_c}.env[{v2_env[0]}]",
                f"{_names.RAY_ENABLE_AUTOSCALER_V2} is on but autoscaling is disabled",
                "set enableInTreeAutoscaling: true, or remove the env var",
            )
    else:
        for i, wg in suspended:
            yield Violation(
                C.RAYCLUSTER_SUSPEND_GROUP_WITH_AUTOSCALING,
                f"{prefix}.workerGroupSpecs[{i}].suspend",
                f"worker group {wg.group_name} is suspended while autoscaling is on",
                "do not suspend groups of an autoscaling cluster",
            )
        options = spec.autoscaler_options
        if options is not None and options.version is not None and v2_env is not None:
            yield Violation(
                C.RAYCLUSTER_AUTOSCALER_VERSION_AND_ENV,
                f"{head_c}.env[{v2_env[0]}]",
                f"both autoscalerOptions.version and {_names.RAY_ENABLE_AUTOSCALER_V2} are set",
                "keep only spec.autoscalerOptions.version",
            )
        if autoscaler_v2_enabled(spec):
            for path, label, template in group_templates(spec, prefix):
                if restart_policy(template) not in ("", "Never"):
                    yield Violation(
                        C.RAYCLUSTER_V2_RESTART_POLICY,
                        f"{path}.template.spec.restartPolicy",
                        f"{label} has restartPolicy {restart_policy(template)} with autoscaler v2",
                        "use restartPolicy Never or leave it unset",
                    )
    options = spec.autoscaler_options
    if options is None:
        return
    if options.idle_timeout_seconds is not None and options.idle_timeout_seconds < 0:
        yield Violation(
            C.RAYCLUSTER_AUTOSCALER_NEGATIVE_IDLE_TIMEOUT,
            f"{prefix}.autoscalerOptions.idleTimeoutSeconds",
            f"idleTimeoutSeconds is {options.idle_timeout_seconds}",
            "set it to 0 or more",
        )
    yield from managed_env(
        options.env or [],
        (_names.KUBERAY_GEN_AUTOSCALER_START_CMD,),
        C.RAYCLUSTER_AUTOSCALER_MANAGED_ENV,
        f"{prefix}.autoscalerOptions",
        fix="remove it from autoscalerOptions.env",
    )
