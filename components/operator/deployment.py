"""The operator's Deployment, its metrics Service and its PodDisruptionBudget.

The container runs ``OPERATOR_COMMAND`` (the entrypoint of the image hack/image builds;
a test holds them equal) with flags of ``python -m operator_runtime`` only, and only those
the user set: an unset knob keeps the operator's own default, which lives in its argument
parser. The flags the pod spec depends on (ports, shutdown timeout, Lease name) are always
passed, so the probes, the Service and the grace period never rely on a default elsewhere.

With ``operator_config`` the settings KubeRay's ``Configuration`` file holds are in the
file (``config.py`` writes them there) and only the flags the file cannot hold stay:
the operator ignores the others when it reads ``--config``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, cast

import pulumi
import pulumi_kubernetes as k8s

from operator_runtime.render.rbac import USE_KUBERNETES_PROXY

from .args import OPERATOR_CONFIG_PATH, Plan

__all__ = [
    "CONTAINER_NAME",
    "HEALTH_PORT",
    "METRICS_PORT",
    "OPERATOR_COMMAND",
    "SHUTDOWN_TIMEOUT_SECONDS",
    "create_config_map",
    "create_deployment",
    "create_disruption_budget",
    "create_metrics_service",
    "operator_flags",
]

OPERATOR_COMMAND: Final = ("python", "-m", "operator_runtime")
"""What the operator image's ENTRYPOINT runs and the Deployment's ``command`` repeats, so a
custom image with another entrypoint still starts the operator."""
CONTAINER_NAME: Final = "operator"
METRICS_PORT: Final = 8080
HEALTH_PORT: Final = 8082
SHUTDOWN_TIMEOUT_SECONDS: Final = 30
_GRACE_MARGIN_SECONDS: Final = 15
"""After the drain: flushing events and releasing the Lease, so a standby takes over at
once instead of after the Lease expires. The kubelet's SIGKILL must not cut that short."""
_TMP_VOLUME: Final = "tmp"
_CONFIG_VOLUME: Final = "operator-config"


def operator_flags(plan: Plan) -> list[str]:
    """The container's args: every one a flag of ``operator_runtime.cli.build_parser``."""
    flags = [f"--config={OPERATOR_CONFIG_PATH}"] if plan.operator_config else _file_flags(plan)
    flags.append(f"--shutdown-timeout={SHUTDOWN_TIMEOUT_SECONDS}")
    if plan.leader_election:
        # The Lease's namespace is the pod's own (the operator reads it from its token).
        flags.append(f"--leader-election-id={plan.leader_election_id}")
    if plan.feature_gates_given:
        # Every gate spelled out: the pod spec says what runs, whatever the defaults become.
        flags.append(f"--feature-gates={plan.feature_gates.as_flag()}")
    optional: Sequence[tuple[str, object]] = (
        ("--log-stdout-encoder", plan.log_format),
        ("--log-level", plan.log_level),
    )
    flags.extend(f"{flag}={value}" for flag, value in optional if value is not None)
    return flags


def _file_flags(plan: Plan) -> list[str]:
    """The flags of the settings a configuration file would hold (``config.py`` writes
    the same settings into the file when there is one)."""
    flags = [
        f"--metrics-addr=:{METRICS_PORT}",
        # KubeRay's default is off; its chart turns it on, and the alert rules need it.
        "--enable-metrics=true",
        f"--health-probe-bind-address=:{HEALTH_PORT}",
    ]
    if not plan.leader_election:
        flags.append("--enable-leader-election=false")
    flags.extend(f"--watch-namespace={namespace}" for namespace in plan.watch_namespaces)
    if plan.use_kubernetes_proxy:
        flags.append(USE_KUBERNETES_PROXY)
    optional: Sequence[tuple[str, object]] = (
        ("--qps", plan.qps),
        ("--burst", plan.burst),
        ("--reconcile-concurrency", plan.reconcile_concurrency),
    )
    flags.extend(f"{flag}={value}" for flag, value in optional if value is not None)
    return flags


def _probe(path: str, period_seconds: int) -> k8s.core.v1.ProbeArgs:
    return k8s.core.v1.ProbeArgs(
        http_get=k8s.core.v1.HTTPGetActionArgs(path=path, port="health"),
        initial_delay_seconds=5,
        period_seconds=period_seconds,
        timeout_seconds=2,
        failure_threshold=3,
    )


def _container(plan: Plan) -> k8s.core.v1.ContainerArgs:
    return k8s.core.v1.ContainerArgs(
        name=CONTAINER_NAME,
        image=plan.image,
        image_pull_policy=plan.image_pull_policy,
        command=list(OPERATOR_COMMAND),
        args=operator_flags(plan),
        env=[k8s.core.v1.EnvVarArgs(name=name, value=value) for name, value in plan.env] or None,
        ports=[
            k8s.core.v1.ContainerPortArgs(name="metrics", container_port=METRICS_PORT),
            k8s.core.v1.ContainerPortArgs(name="health", container_port=HEALTH_PORT),
        ],
        # /healthz answers while the process runs its loops; /readyz once every informer
        # has synced, on standbys too, so a rollout waits for a warm replica.
        liveness_probe=_probe("/healthz", 10),
        readiness_probe=_probe("/readyz", 5),
        resources=k8s.core.v1.ResourceRequirementsArgs(
            requests=plan.resources.get("requests"), limits=plan.resources.get("limits")
        ),
        security_context=k8s.core.v1.SecurityContextArgs(
            run_as_non_root=True,
            read_only_root_filesystem=True,
            allow_privilege_escalation=False,
            capabilities=k8s.core.v1.CapabilitiesArgs(drop=["ALL"]),
            seccomp_profile=k8s.core.v1.SeccompProfileArgs(type="RuntimeDefault"),
        ),
        volume_mounts=_volume_mounts(plan),
    )


def _volume_mounts(plan: Plan) -> list[k8s.core.v1.VolumeMountArgs]:
    # The root filesystem is read-only; a library that wants a scratch file gets /tmp.
    mounts = [k8s.core.v1.VolumeMountArgs(name=_TMP_VOLUME, mount_path="/tmp")]
    if plan.operator_config:
        mounts.append(
            k8s.core.v1.VolumeMountArgs(
                name=_CONFIG_VOLUME,
                mount_path=OPERATOR_CONFIG_PATH.rsplit("/", 1)[0],
                read_only=True,
            )
        )
    return mounts


def _volumes(plan: Plan) -> list[k8s.core.v1.VolumeArgs]:
    volumes = [
        k8s.core.v1.VolumeArgs(
            name=_TMP_VOLUME, empty_dir=k8s.core.v1.EmptyDirVolumeSourceArgs(size_limit="64Mi")
        )
    ]
    if plan.config_map_name:
        volumes.append(
            k8s.core.v1.VolumeArgs(
                name=_CONFIG_VOLUME,
                config_map=k8s.core.v1.ConfigMapVolumeSourceArgs(name=plan.config_map_name),
            )
        )
    return volumes


def _spread(plan: Plan) -> list[k8s.core.v1.TopologySpreadConstraintArgs] | None:
    if plan.replicas < 2:
        return None
    # Standbys on other nodes, or losing one node loses the leader and its standby at once.
    return [
        k8s.core.v1.TopologySpreadConstraintArgs(
            max_skew=1,
            topology_key="kubernetes.io/hostname",
            when_unsatisfiable="ScheduleAnyway",
            label_selector=k8s.meta.v1.LabelSelectorArgs(match_labels=plan.selector_labels),
        )
    ]


def create_deployment(
    parent: pulumi.Resource,
    plan: Plan,
    namespace: pulumi.Input[str],
    service_account_name: pulumi.Input[str],
    depends_on: Sequence[pulumi.Resource],
) -> k8s.apps.v1.Deployment:
    pod = k8s.core.v1.PodSpecArgs(
        service_account_name=service_account_name,
        # The YAML form, as given: merged over ours in checks, passed through as is.
        security_context=cast(k8s.core.v1.PodSecurityContextArgs, dict(plan.pod_security_context)),
        termination_grace_period_seconds=SHUTDOWN_TIMEOUT_SECONDS + _GRACE_MARGIN_SECONDS,
        containers=[_container(plan)],
        volumes=_volumes(plan),
        topology_spread_constraints=_spread(plan),
        image_pull_secrets=[
            k8s.core.v1.LocalObjectReferenceArgs(name=name) for name in plan.image_pull_secrets
        ]
        or None,
        node_selector=plan.node_selector,
        tolerations=plan.tolerations,
        affinity=plan.affinity,
        priority_class_name=plan.priority_class_name,
    )
    pod_metadata = k8s.meta.v1.ObjectMetaArgs(
        labels={**plan.labels, **plan.pod_labels}, annotations=dict(plan.pod_annotations) or None
    )
    return k8s.apps.v1.Deployment(
        plan.resource_name,
        metadata=plan.metadata(plan.base_name, namespace),
        spec=k8s.apps.v1.DeploymentSpecArgs(
            replicas=plan.replicas,
            selector=k8s.meta.v1.LabelSelectorArgs(match_labels=plan.selector_labels),
            template=k8s.core.v1.PodTemplateSpecArgs(metadata=pod_metadata, spec=pod),
        ),
        # It waits for the CRDs and its RBAC: an operator started before them only
        # crash-loops on its first list; on destroy it goes first, so it never runs
        # without its permissions.
        opts=plan.child(parent, depends_on),
    )


METRICS_LABELS: Final = {"app.kubernetes.io/component": "metrics"}
"""On the metrics Service, so a ServiceMonitor selects it and nothing else of ours."""


def create_metrics_service(
    parent: pulumi.Resource, plan: Plan, namespace: pulumi.Input[str]
) -> k8s.core.v1.Service:
    return k8s.core.v1.Service(
        f"{plan.resource_name}-metrics",
        metadata=plan.metadata(plan.metrics_service_name, namespace, METRICS_LABELS),
        spec=k8s.core.v1.ServiceSpecArgs(
            type="ClusterIP",
            selector=plan.selector_labels,
            ports=[
                k8s.core.v1.ServicePortArgs(
                    name="metrics", port=METRICS_PORT, target_port="metrics", protocol="TCP"
                )
            ],
        ),
        opts=plan.child(parent),
    )


def create_disruption_budget(
    parent: pulumi.Resource, plan: Plan, namespace: pulumi.Input[str]
) -> k8s.policy.v1.PodDisruptionBudget | None:
    """With standbys, a node drain takes one replica at a time; with a single replica a
    budget would block every drain, so there is none."""
    if plan.replicas < 2:
        return None
    return k8s.policy.v1.PodDisruptionBudget(
        plan.resource_name,
        metadata=plan.metadata(plan.base_name, namespace),
        spec=k8s.policy.v1.PodDisruptionBudgetSpecArgs(
            max_unavailable=1,
            selector=k8s.meta.v1.LabelSelectorArgs(match_labels=plan.selector_labels),
        ),
        opts=plan.child(parent),
    )


def create_config_map(
    parent: pulumi.Resource, plan: Plan, namespace: pulumi.Input[str]
) -> k8s.core.v1.ConfigMap | None:
    """The ``operator_config`` file. Immutable and named after its content: a new file is
    a new ConfigMap, so the pod template changes and the pods, which read the file only at
    start, roll; the old one is deleted once the Deployment no longer mounts it."""
    if plan.operator_config is None or plan.config_map_name is None:
        return None
    return k8s.core.v1.ConfigMap(
        f"{plan.resource_name}-config",
        metadata=plan.metadata(plan.config_map_name, namespace),
        data={OPERATOR_CONFIG_PATH.rsplit("/", 1)[1]: plan.operator_config},
        immutable=True,
        opts=plan.child(parent),
    )
