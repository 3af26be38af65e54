"""``settle``: the one pass that checks ``RayOperatorArgs`` and decides every default.

Everything a user can get wrong is refused here, at program time, before the component
registers anything: the engine then prints one ``RayInputError`` naming the argument and
the fix, never a traceback, and nothing is half-created.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Final

import pulumi

from operator_runtime.api import FeatureGates
from operator_runtime.api.errors import FeatureGateError
from operator_runtime.render.batchscheduler import chosen_scheduler

from .._inputs import RayInputError, has_outputs
from . import podchecks
from .args import (
    DEFAULT_NAMESPACE,
    DEFAULT_RESOURCES,
    METRICS_SUFFIX,
    SELF_DELETING_RAYJOB_ENV,
    Plan,
    RayOperatorArgs,
)
from .config import ConfigRefusal, OwnedSettings, config_map_suffix, render_file
from .grafana import DEFAULT_DASHBOARD_LABELS
from .refusal import Refusal as _Refusal

__all__ = ["settle"]

_DNS_LABEL: Final = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_ENV_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")


def settle(resource_name: str, args: RayOperatorArgs) -> Plan:
    """Check ``args`` and decide every default; raise ``RayInputError`` naming the arg."""
    try:
        return _settle(resource_name, args)
    except _Refusal as refusal:
        raise RayInputError(
            f"RayOperator {resource_name}",
            refusal.path,
            refusal.detail,
            refusal.hint,
            f"RAYOPERATOR_{refusal.code}",
        ) from None


def _settle(resource_name: str, args: RayOperatorArgs) -> Plan:
    # A None where the field has another default is that default (``RayOperatorArgs``).
    namespace = args.namespace if args.namespace is not None else DEFAULT_NAMESPACE
    replicas = args.replicas if args.replicas is not None else 1
    leader_election = args.leader_election is not False
    base_name = args.name if args.name is not None else resource_name
    _check_dns_label("name", base_name, len(METRICS_SUFFIX))
    if isinstance(namespace, str):
        _check_dns_label("namespace", namespace)
    image = podchecks.image(args.image)
    _check_count("replicas", replicas, "REPLICAS")
    if replicas > 1 and not leader_election:
        raise _Refusal(
            "leader_election",
            f"is off with {replicas} replicas: every replica would "
            "reconcile the same objects at once",
            "keep leader_election=True or use 1 replica",
            "LEADER_ELECTION",
        )
    if args.burst is not None:
        _check_count("burst", args.burst, "BURST")
    if args.reconcile_concurrency is not None:
        _check_count("reconcile_concurrency", args.reconcile_concurrency, "CONCURRENCY")
    if args.qps is not None and (
        isinstance(args.qps, bool) or not isinstance(args.qps, int | float) or args.qps <= 0
    ):
        raise _Refusal("qps", f"must be a number above 0, got {args.qps!r}", "e.g. 100", "QPS")
    _check_choice("log_format", args.log_format, ("json", "console"))
    _check_choice("log_level", args.log_level, ("debug", "info", "warning", "error"))
    _check_choice("image_pull_policy", args.image_pull_policy, ("Always", "IfNotPresent", "Never"))
    watch_namespaces = _watch_namespaces(args.watch_namespaces or ())
    create_namespace, install_crds = _cluster_scoped_choices(args, watch_namespaces)
    feature_gates = _feature_gates(args.feature_gates)
    create_account, account_name, account_annotations = podchecks.service_account(
        args.service_account, base_name
    )
    config_text = _operator_config(args, watch_namespaces, feature_gates)
    if args.priority_class_name is not None:
        podchecks.object_names("priority_class_name", [args.priority_class_name], "PRIORITY")
    return Plan(
        resource_name=resource_name,
        base_name=base_name,
        namespace=namespace,
        create_namespace=create_namespace,
        install_crds=install_crds,
        retain_crds_on_delete=args.retain_crds_on_delete is not False,
        image=image,
        image_pull_policy=args.image_pull_policy,
        image_pull_secrets=podchecks.object_names(
            "image_pull_secrets", args.image_pull_secrets or (), "PULL_SECRETS"
        ),
        replicas=replicas,
        resources=_resources(args.resources),
        feature_gates=feature_gates,
        feature_gates_given=args.feature_gates is not None,
        log_format=args.log_format,
        log_level=args.log_level,
        qps=args.qps,
        burst=args.burst,
        reconcile_concurrency=args.reconcile_concurrency,
        watch_namespaces=watch_namespaces,
        cluster_scoped_rbac=args.cluster_scoped_rbac is not False,
        leader_election=leader_election,
        use_kubernetes_proxy=bool(args.use_kubernetes_proxy),
        env=_env(args.env),
        service_monitor=bool(args.service_monitor),
        prometheus_rule=bool(args.prometheus_rule),
        monitoring_labels=podchecks.label_map("monitoring_labels", args.monitoring_labels),
        service_monitor_interval=podchecks.scrape_interval(args.service_monitor_interval),
        service_monitor_namespace=_namespace_or_none(
            "service_monitor_namespace", args.service_monitor_namespace
        ),
        grafana_dashboards=bool(args.grafana_dashboards),
        grafana_dashboard_labels=_dashboard_labels(args.grafana_dashboard_labels),
        grafana_dashboard_namespace=_namespace_or_none(
            "grafana_dashboard_namespace", args.grafana_dashboard_namespace
        ),
        grafana_folder=_folder(args.grafana_folder),
        extra_labels=podchecks.label_map("labels", args.labels),
        extra_annotations=podchecks.annotation_map("annotations", args.annotations),
        pod_labels=podchecks.label_map("pod_labels", args.pod_labels),
        pod_annotations=podchecks.annotation_map("pod_annotations", args.pod_annotations),
        node_selector=podchecks.annotation_map("node_selector", args.node_selector) or None,
        tolerations=podchecks.tolerations(args.tolerations),
        affinity=args.affinity,
        priority_class_name=args.priority_class_name,
        pod_security_context=podchecks.pod_security_context(args.pod_security_context),
        create_service_account=create_account,
        service_account_name=account_name,
        service_account_annotations=account_annotations,
        batch_scheduler=_batch_scheduler(args),
        operator_config=config_text,
        config_map_name=(
            f"{base_name}-config-{config_map_suffix(config_text)}" if config_text else None
        ),
    )


def _namespace_or_none(path: str, namespace: pulumi.Input[str] | None) -> pulumi.Input[str] | None:
    if isinstance(namespace, str):
        _check_dns_label(path, namespace)
    return namespace


def _dashboard_labels(labels: Mapping[str, str] | None) -> Mapping[str, str]:
    if labels is None:
        return DEFAULT_DASHBOARD_LABELS
    checked = podchecks.label_map("grafana_dashboard_labels", labels)
    if not checked:
        # No label: the sidecar would never load the boards, and nothing would say so.
        raise _Refusal(
            "grafana_dashboard_labels",
            "is empty: the Grafana sidecar finds dashboards by a label",
            'leave it None for {"grafana_dashboard": "1"}, or give the label your '
            "sidecar's `label` setting names",
            "DASHBOARD_LABELS",
        )
    return checked


def _folder(folder: str | None) -> str | None:
    if folder is not None and (not isinstance(folder, str) or not folder.strip()):
        raise _Refusal(
            "grafana_folder",
            f"must be a folder's name, got {folder!r}",
            'e.g. "Ray", or None for none',
            "GRAFANA_FOLDER",
        )
    return folder


def _batch_scheduler(args: RayOperatorArgs) -> str:
    """The scheduler the (already checked) configuration file chooses, as the operator
    chooses it."""
    given = args.operator_config or {}
    return chosen_scheduler(
        str(given.get("batchScheduler") or ""), given.get("enableBatchScheduler") is True
    )


def _operator_config(
    args: RayOperatorArgs, watch_namespaces: tuple[str, ...], gates: FeatureGates
) -> str | None:
    """The configuration file's text, or None without ``operator_config``."""
    if args.operator_config is None:
        return None
    if not isinstance(args.operator_config, Mapping):
        raise _Refusal(
            "operator_config",
            f"must be a mapping of the Configuration's fields, got {args.operator_config!r}",
            '{"defaultPodLabels": {"team": "ml"}}',
            "OPERATOR_CONFIG",
        )
    if has_outputs(args.operator_config):
        raise _Refusal(
            "operator_config",
            "holds an Output: the file is checked with the operator's parser at preview, "
            "so its values must be known then",
            "pass plain values (a Secret's contents belong in a Secret, not in this file)",
            "OPERATOR_CONFIG",
        )
    owned = OwnedSettings(
        leader_election=args.leader_election is not False,
        watch_namespaces=watch_namespaces,
        use_kubernetes_proxy=bool(args.use_kubernetes_proxy),
        qps=args.qps,
        burst=args.burst,
        reconcile_concurrency=args.reconcile_concurrency,
        kubernetes_was=gates.enabled("KubernetesWAS"),
    )
    try:
        return render_file(args.operator_config, owned)
    except ConfigRefusal as refusal:
        raise _Refusal(
            f"operator_config.{refusal.field}", refusal.detail, refusal.hint, "OPERATOR_CONFIG"
        ) from None


def _check_dns_label(path: str, value: object, reserve: int = 0) -> None:
    limit = 63 - reserve
    if not isinstance(value, str) or not _DNS_LABEL.fullmatch(value) or len(value) > limit:
        raise _Refusal(
            path,
            f"{value!r} is not a DNS label of at most {limit} characters",
            "use lowercase letters, digits and '-', starting and ending with a letter or digit",
            "NAME",
        )


def _check_count(path: str, value: object, code: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _Refusal(
            path, f"must be a whole number of at least 1, got {value!r}", f"set {path} >= 1", code
        )


def _check_choice(path: str, value: object, choices: tuple[str, ...]) -> None:
    if value is not None and value not in choices:
        raise _Refusal(
            path,
            f"{value!r} is not one of {', '.join(choices)}",
            f"use one of {', '.join(choices)}, or None for the default",
            "CHOICE",
        )


def _watch_namespaces(namespaces: Sequence[str]) -> tuple[str, ...]:
    if isinstance(namespaces, str):
        # A bare string is a sequence of letters; it is surely one namespace misplaced.
        raise _Refusal(
            "watch_namespaces",
            f"is the string {namespaces!r}, not a list",
            f"write watch_namespaces=[{namespaces!r}]",
            "WATCH_NAMESPACES",
        )
    for namespace in namespaces:
        _check_dns_label("watch_namespaces", namespace)
    if len(set(namespaces)) != len(namespaces):
        raise _Refusal(
            "watch_namespaces",
            f"lists a namespace twice: {list(namespaces)}",
            "list each namespace once",
            "WATCH_NAMESPACES",
        )
    return tuple(namespaces)


def _cluster_scoped_choices(
    args: RayOperatorArgs, watch_namespaces: tuple[str, ...]
) -> tuple[bool, bool]:
    """(create_namespace, install_crds). Namespaced RBAC promises no cluster-scoped
    object, so a Namespace or a CRD asked for explicitly is refused there, not dropped."""
    if args.cluster_scoped_rbac is not False:
        create = args.create_namespace if args.create_namespace is not None else True
        install = args.install_crds if args.install_crds is not None else True
        return create, install
    if not watch_namespaces:
        raise _Refusal(
            "cluster_scoped_rbac",
            "is False but watch_namespaces is empty: an operator that "
            "watches every namespace needs cluster-wide permissions",
            "list the namespaces in watch_namespaces, or keep cluster_scoped_rbac=True",
            "NAMESPACED_RBAC",
        )
    for path, value, kind in (
        ("install_crds", args.install_crds, "CustomResourceDefinitions"),
        ("create_namespace", args.create_namespace, "a Namespace"),
    ):
        if value:
            raise _Refusal(
                path,
                f"is True with cluster_scoped_rbac=False, but {kind} are cluster-scoped "
                "objects, which namespaced RBAC promises not to create",
                f"leave {path} unset (or False) and create them from a stack with cluster "
                "rights, e.g. a RayOperator with cluster_scoped_rbac=True",
                "NAMESPACED_RBAC",
            )
    return False, False


def _resources(
    resources: Mapping[str, Mapping[str, pulumi.Input[str]]] | None,
) -> Mapping[str, Mapping[str, pulumi.Input[str]]]:
    if resources is None:
        return DEFAULT_RESOURCES
    unknown = sorted(set(resources) - {"requests", "limits"})
    if unknown:
        raise _Refusal(
            "resources",
            f"has unknown key(s) {', '.join(unknown)}",
            'use "requests" and "limits", e.g. {"limits": {"memory": "1Gi"}}',
            "RESOURCES",
        )
    return resources


def _feature_gates(gates: FeatureGates | Mapping[str, bool] | str | None) -> FeatureGates:
    if gates is None or isinstance(gates, FeatureGates):
        return gates or FeatureGates()
    if isinstance(gates, Mapping):
        for gate, value in gates.items():
            if not isinstance(value, bool):
                raise _Refusal(
                    f"feature_gates.{gate}",
                    f"must be True or False, got {value!r}",
                    f"write {{{gate!r}: True}}",
                    "FEATURE_GATES",
                )
        flag = ",".join(f"{gate}={str(value).lower()}" for gate, value in gates.items())
    else:
        flag = gates
    try:
        # The operator's own parser, so the component and the process agree on every gate.
        return FeatureGates.parse(flag)
    except FeatureGateError as error:
        raise _Refusal(
            "feature_gates", str(error), "use the KubeRay gate names listed", "FEATURE_GATES"
        ) from None


def _env(env: Mapping[str, pulumi.Input[str]] | None) -> tuple[tuple[str, pulumi.Input[str]], ...]:
    for name in env or {}:
        if not isinstance(name, str) or not _ENV_NAME.fullmatch(name):
            raise _Refusal(
                f"env.{name}",
                "is not a valid environment variable name",
                "use letters, digits and '_'",
                "ENV",
            )
        if name == SELF_DELETING_RAYJOB_ENV:
            raise _Refusal(
                f"env.{name}",
                "would let the operator delete finished RayJobs itself; a "
                "RayJob this stack manages would then be created again (and rerun) by the "
                "next `pulumi up --refresh`",
                "leave it unset; a RayJob's shutdownAfterJobFinishes frees its RayCluster "
                "and keeps the RayJob",
                "SELF_DELETING_RAYJOB",
            )
    # Sorted: the pod template, and so the rollout, must not depend on dict order.
    return tuple(sorted((env or {}).items()))
