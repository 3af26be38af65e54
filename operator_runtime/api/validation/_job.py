"""Rules for a RayJobSpec (``ValidateRayJobSpec`` and the deletion-strategy rules)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from itertools import pairwise

from operator_runtime.api.errors import ErrorCode as C
from operator_runtime.api.errors import Violation
from operator_runtime.api.features import FeatureGates
from operator_runtime.api.rayjob import DeletionRule, DeletionStrategy, RayJobSpec
from operator_runtime.api.useryaml import UserYamlError, load_yaml
from operator_runtime.api.validation import _names
from operator_runtime.api.validation._cluster import cluster_spec_violations
from operator_runtime.api.validation._cluster_features import (
    autoscaling_enabled,
    k8s_token_auth_enabled,
)
from operator_runtime.api.validation._pod import restart_policy
from operator_runtime.api.validation._refs import name_violations

# Deletion policies from the least to the most destructive; TTLs must not decrease.
_TTL_ORDER = ("DeleteWorkers", "DeleteCluster", "DeleteSelf")
# Policies that touch the cluster, which a RayJob on a clusterSelector does not own.
_DELETES_CLUSTER = ("DeleteCluster", "DeleteWorkers")


def job_spec_violations(
    spec: RayJobSpec, annotations: Mapping[str, str], gates: FeatureGates, prefix: str
) -> Iterator[Violation]:
    """Every broken rule, lazily and in KubeRay's order."""
    shutdown = bool(spec.shutdown_after_job_finishes)
    if spec.suspend and not shutdown:
        yield Violation(
            C.RAYJOB_SUSPEND_WITHOUT_SHUTDOWN,
            f"{prefix}.suspend",
            "a RayJob can only be suspended with shutdownAfterJobFinishes: true",
            "set shutdownAfterJobFinishes: true or suspend: false",
        )
    if spec.ttl_seconds_after_finished < 0:
        yield Violation(
            C.RAYJOB_NEGATIVE_TTL,
            f"{prefix}.ttlSecondsAfterFinished",
            f"ttlSecondsAfterFinished is {spec.ttl_seconds_after_finished}",
            "set it to 0 or more",
        )
    yield from _deletion(spec, gates, prefix)
    selector = spec.cluster_selector or {}
    if spec.suspend and selector:
        yield Violation(
            C.RAYJOB_SELECTOR_WITH_SUSPEND,
            f"{prefix}.suspend",
            "a RayJob using clusterSelector cannot be suspended",
            "remove suspend, or let the RayJob create its cluster",
        )
    if spec.ray_cluster_spec is None and not selector:
        yield Violation(
            C.RAYJOB_NO_CLUSTER,
            f"{prefix}.rayClusterSpec",
            "neither rayClusterSpec nor clusterSelector is set",
            "set rayClusterSpec, or clusterSelector with ray.io/cluster",
        )
    backoff = spec.backoff_limit or 0
    if selector:
        if not selector.get(_names.CLUSTER_SELECTOR_KEY):
            yield Violation(
                C.RAYJOB_SELECTOR_EMPTY_CLUSTER_NAME,
                f"{prefix}.clusterSelector[{_names.CLUSTER_SELECTOR_KEY}]",
                "clusterSelector does not name a cluster",
                f"set clusterSelector {_names.CLUSTER_SELECTOR_KEY}: <RayCluster name>",
            )
        if spec.submission_mode == "SidecarMode":
            yield Violation(
                C.RAYJOB_SELECTOR_SIDECAR,
                f"{prefix}.submissionMode",
                "SidecarMode cannot run on an existing cluster (clusterSelector)",
                "use K8sJobMode or HTTPMode",
            )
        if backoff > 0:
            yield Violation(
                C.RAYJOB_SELECTOR_BACKOFF_LIMIT,
                f"{prefix}.backoffLimit",
                f"backoffLimit {backoff} cannot be used with clusterSelector",
                "set backoffLimit: 0",
            )
    if spec.submission_mode == "InteractiveMode" and backoff > 0:
        yield Violation(
            C.RAYJOB_INTERACTIVE_BACKOFF_LIMIT,
            f"{prefix}.backoffLimit",
            f"backoffLimit {backoff} cannot be used in InteractiveMode",
            "set backoffLimit: 0",
        )
    if spec.submission_mode == "SidecarMode":
        yield from _sidecar(spec, prefix)
    if spec.ray_cluster_spec is not None:
        if k8s_token_auth_enabled(spec.ray_cluster_spec):
            yield Violation(
                C.RAYJOB_K8S_TOKEN_AUTH,
                f"{prefix}.rayClusterSpec.authOptions.enableK8sTokenAuth",
                "Kubernetes token authentication is not supported for RayJob",
                "turn enableK8sTokenAuth off (use mode: token)",
            )
        yield from cluster_spec_violations(
            spec.ray_cluster_spec, annotations, gates, f"{prefix}.rayClusterSpec"
        )
    yield from _limits(spec, prefix)
    yield from name_violations(
        f"{prefix}.clusterSelector[{_names.CLUSTER_SELECTOR_KEY}]",
        selector.get(_names.CLUSTER_SELECTOR_KEY),
        "RayCluster",
    )


def _sidecar(spec: RayJobSpec, prefix: str) -> Iterator[Violation]:
    for field, value, code in (
        ("submitterPodTemplate", spec.submitter_pod_template, C.RAYJOB_SIDECAR_SUBMITTER_TEMPLATE),
        ("submitterConfig", spec.submitter_config, C.RAYJOB_SIDECAR_SUBMITTER_CONFIG),
    ):
        if value is not None:
            yield Violation(
                code,
                f"{prefix}.{field}",
                f"SidecarMode does not use {field}",
                f"remove {field} or use K8sJobMode",
            )
    cluster = spec.ray_cluster_spec
    if cluster is not None:
        policy = restart_policy(cluster.head_group_spec.template)
        if policy not in ("", "Never"):
            yield Violation(
                C.RAYJOB_SIDECAR_RESTART_POLICY,
                f"{prefix}.rayClusterSpec.headGroupSpec.template.spec.restartPolicy",
                f"the head has restartPolicy {policy} in SidecarMode",
                "use restartPolicy Never or leave it unset",
            )


def _limits(spec: RayJobSpec, prefix: str) -> Iterator[Violation]:
    try:
        runtime_env: object = load_yaml(spec.runtime_env_yaml or "")
    except UserYamlError as exc:
        if exc.code is C.YAML_TOO_LARGE:
            yield Violation(
                C.YAML_TOO_LARGE,
                f"{prefix}.runtimeEnvYAML",
                f"runtimeEnvYAML is refused: {exc}",
                "write the runtime environment out without so many aliases or bytes",
            )
            runtime_env = None
        else:
            runtime_env = str(exc)
    if runtime_env is not None and not isinstance(runtime_env, dict):
        yield Violation(
            C.RAYJOB_INVALID_RUNTIME_ENV,
            f"{prefix}.runtimeEnvYAML",
            f"runtimeEnvYAML is not a YAML mapping: {runtime_env}",
            "write the runtime environment as a YAML mapping (e.g. pip: [...])",
        )
    if spec.active_deadline_seconds is not None and spec.active_deadline_seconds <= 0:
        yield Violation(
            C.RAYJOB_NONPOSITIVE_ACTIVE_DEADLINE,
            f"{prefix}.activeDeadlineSeconds",
            f"activeDeadlineSeconds is {spec.active_deadline_seconds}",
            "set it to 1 or more, or leave it unset",
        )
    if spec.backoff_limit is not None and spec.backoff_limit < 0:
        yield Violation(
            C.RAYJOB_NEGATIVE_BACKOFF_LIMIT,
            f"{prefix}.backoffLimit",
            f"backoffLimit is {spec.backoff_limit}",
            "set it to 0 or more",
        )


def _deletion(spec: RayJobSpec, gates: FeatureGates, prefix: str) -> Iterator[Violation]:
    shutdown = bool(spec.shutdown_after_job_finishes)
    if not shutdown and spec.ttl_seconds_after_finished > 0:
        yield Violation(
            C.RAYJOB_TTL_WITHOUT_SHUTDOWN,
            f"{prefix}.ttlSecondsAfterFinished",
            "ttlSecondsAfterFinished only applies with shutdownAfterJobFinishes: true",
            "set shutdownAfterJobFinishes: true or ttlSecondsAfterFinished: 0",
        )
    strategy = spec.deletion_strategy
    if strategy is None:
        return
    path = f"{prefix}.deletionStrategy"
    if not gates.ray_job_deletion_policy:
        yield Violation(
            C.RAYJOB_DELETION_STRATEGY_GATE_DISABLED,
            path,
            "deletionStrategy needs the RayJobDeletionPolicy feature gate",
            "enable the gate on the operator or remove deletionStrategy",
        )
    legacy = strategy.on_success is not None or strategy.on_failure is not None
    rules = strategy.deletion_rules or []
    if rules and shutdown:
        yield Violation(
            C.RAYJOB_DELETION_RULES_WITH_SHUTDOWN,
            f"{path}.deletionRules",
            "deletionRules and shutdownAfterJobFinishes are mutually exclusive",
            "remove shutdownAfterJobFinishes and express it as a DeleteCluster rule",
        )
    if rules and legacy:
        yield Violation(
            C.RAYJOB_DELETION_RULES_WITH_LEGACY,
            f"{path}.deletionRules",
            "deletionRules cannot be combined with onSuccess/onFailure",
            "use either deletionRules or both onSuccess and onFailure",
        )
    if legacy:
        yield from _legacy(spec, strategy, path)
    elif rules:
        yield from _rules(spec, rules, path)
    else:
        yield Violation(
            C.RAYJOB_DELETION_STRATEGY_EMPTY,
            path,
            "deletionStrategy is empty",
            "set deletionRules, or both onSuccess and onFailure",
        )


def _policy_with_selector(policy: str, path: str) -> Violation:
    return Violation(
        C.RAYJOB_DELETION_POLICY_WITH_SELECTOR,
        path,
        f"{policy} would delete a cluster the RayJob does not own (clusterSelector)",
        "use DeleteSelf or DeleteNone",
    )


def _delete_workers_with_autoscaling(path: str) -> Violation:
    return Violation(
        C.RAYJOB_DELETE_WORKERS_WITH_AUTOSCALING,
        path,
        "DeleteWorkers does not support clusters with autoscaling",
        "use DeleteCluster, or turn autoscaling off",
    )


def _legacy(spec: RayJobSpec, strategy: DeletionStrategy, path: str) -> Iterator[Violation]:
    success, failure = strategy.on_success, strategy.on_failure
    if success is None or failure is None:
        yield Violation(
            C.RAYJOB_LEGACY_POLICY_INCOMPLETE,
            f"{path}.{'onSuccess' if success is None else 'onFailure'}",
            "the legacy deletion policy needs both onSuccess and onFailure",
            "set both onSuccess and onFailure",
        )
        return
    for field, policy in (("onSuccess", success.policy), ("onFailure", failure.policy)):
        if policy is None:
            yield Violation(
                C.RAYJOB_LEGACY_POLICY_INCOMPLETE,
                f"{path}.{field}.policy",
                f"{field} has no policy",
                "set policy to DeleteCluster, DeleteWorkers, DeleteSelf or DeleteNone",
            )
            return
    policies = {"onSuccess": success.policy, "onFailure": failure.policy}
    if spec.cluster_selector:
        for field, policy in policies.items():
            if policy in _DELETES_CLUSTER:
                yield _policy_with_selector(policy, f"{path}.{field}.policy")
    if "DeleteWorkers" in policies.values() and autoscaling_enabled(spec.ray_cluster_spec):
        field = next(f for f, p in policies.items() if p == "DeleteWorkers")
        yield _delete_workers_with_autoscaling(f"{path}.{field}.policy")
    if spec.shutdown_after_job_finishes and "DeleteNone" in policies.values():
        field = next(f for f, p in policies.items() if p == "DeleteNone")
        yield Violation(
            C.RAYJOB_SHUTDOWN_WITH_DELETE_NONE,
            f"{path}.{field}.policy",
            "shutdownAfterJobFinishes is true while a deletion policy is DeleteNone",
            "set shutdownAfterJobFinishes: false or choose another policy",
        )


def _rules(spec: RayJobSpec, rules: list[DeletionRule], path: str) -> Iterator[Violation]:
    # (condition field, condition value) -> policy -> ttl, for the uniqueness and order checks.
    ttls: dict[tuple[str, str], dict[str, int]] = {}
    for i, rule in enumerate(rules):
        rule_path = f"{path}.deletionRules[{i}]"
        cond = rule.condition
        if (cond.job_status is None) == (cond.job_deployment_status is None):
            yield Violation(
                C.RAYJOB_DELETION_CONDITION_INVALID,
                f"{rule_path}.condition",
                "a deletion condition needs exactly one of jobStatus and jobDeploymentStatus",
                "set either jobStatus or jobDeploymentStatus",
            )
            continue
        if spec.cluster_selector and rule.policy in _DELETES_CLUSTER:
            yield _policy_with_selector(rule.policy, f"{rule_path}.policy")
            continue
        if rule.policy == "DeleteWorkers" and autoscaling_enabled(spec.ray_cluster_spec):
            yield _delete_workers_with_autoscaling(f"{rule_path}.policy")
            continue
        key = (
            ("jobStatus", cond.job_status)
            if cond.job_status is not None
            else ("jobDeploymentStatus", cond.job_deployment_status or "")
        )
        by_policy = ttls.setdefault(key, {})
        if rule.policy in by_policy:
            yield Violation(
                C.RAYJOB_DUPLICATE_DELETION_RULE,
                rule_path,
                f"a second {rule.policy} rule for {key[0]} {key[1]}",
                "keep one rule per (condition, policy) pair",
            )
            continue
        by_policy[rule.policy] = cond.ttl_seconds
    for (field, value), by_policy in ttls.items():
        ordered = [(p, by_policy[p]) for p in _TTL_ORDER if p in by_policy]
        for (before, before_ttl), (after, after_ttl) in pairwise(ordered):
            if after_ttl < before_ttl:
                yield Violation(
                    C.RAYJOB_DELETION_TTL_ORDER,
                    f"{path}.deletionRules",
                    f"for {field} {value}: {after} ttlSeconds ({after_ttl}) is less than "
                    f"{before} ttlSeconds ({before_ttl})",
                    "order TTLs DeleteWorkers <= DeleteCluster <= DeleteSelf",
                )
