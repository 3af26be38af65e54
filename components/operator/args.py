"""``RayOperatorArgs``, what a user gives, and ``Plan``, what the builders read.

A ``Plan`` is the same knobs with every default decided by ``checks.settle``
(which RBAC mode, whether the namespace and the CRDs are ours, the feature gates, the
ServiceAccount's name, the pod's security context, the configuration file's text), so
no builder decides anything twice.

There is no default ``image``: the only reference the project could name is one in a
registry namespace it does not own (docs/releasing.md), and whoever registered that
namespace would run code with the operator's cluster-wide RBAC.
"""

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final, Protocol

import pulumi
import pulumi_kubernetes as k8s

from operator_runtime.api import FeatureGates

__all__ = [
    "DEFAULT_NAMESPACE",
    "DEFAULT_RESOURCES",
    "METRICS_SUFFIX",
    "OPERATOR_CONFIG_PATH",
    "SELF_DELETING_RAYJOB_ENV",
    "OperatorServiceAccount",
    "Plan",
    "RayOperatorArgs",
    "name_of",
]


DEFAULT_NAMESPACE: Final = "ray-system"
DEFAULT_RESOURCES: Final[Mapping[str, Mapping[str, str]]] = MappingProxyType(
    {
        # Measured: ~130 MiB resident with 10,000 pods cached (benchmarks/README.md).
        "requests": MappingProxyType({"cpu": "100m", "memory": "256Mi"}),
        # No CPU limit: throttling a controller only makes it late, never cheaper.
        "limits": MappingProxyType({"memory": "1Gi"}),
    }
)
SELF_DELETING_RAYJOB_ENV: Final = "DELETE_RAYJOB_CR_AFTER_JOB_FINISHES"
"""KubeRay deletes a finished RayJob itself when this is true; a RayJob that Pulumi
manages would then be created again by the next ``pulumi up --refresh``."""

METRICS_SUFFIX: Final = "-metrics"
OPERATOR_CONFIG_PATH: Final = "/etc/kuberay/config.yaml"
"""Where the pod reads ``operator_config``: the path KubeRay's chart mounts it at."""


class LogFormat(enum.StrEnum):
    """How the operator writes its log lines."""

    JSON = "json"
    CONSOLE = "console"


class LogLevel(enum.StrEnum):
    DEBUG = "debug"
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


class PullPolicy(enum.StrEnum):
    """The operator container's ``imagePullPolicy``."""

    ALWAYS = "Always"
    IF_NOT_PRESENT = "IfNotPresent"
    NEVER = "Never"


@dataclass(frozen=True)
class OperatorServiceAccount:
    """The operator's ServiceAccount, as KubeRay's chart ``serviceAccount`` block has it."""

    create: bool | None = True
    """True when None."""
    name: str | None = None
    """The account's name; the component's base name when None (then ``create`` must be True)."""
    annotations: Mapping[str, str] | None = None
    """E.g. ``eks.amazonaws.com/role-arn`` or ``iam.gke.io/gcp-service-account``; only on
    an account this component creates."""


@dataclass(frozen=True)
class RayOperatorArgs:
    """What to deploy. ``None`` means the operator's own default (the flag is not passed),
    so a default lives in one place: ``python -m operator_runtime``; a field typed
    ``T | None = value`` takes ``value`` for None (the package schema cannot carry a
    default, only that a field may be left out)."""

    name: str | None = None
    """Base name of the Kubernetes objects (Deployment, ServiceAccount, ClusterRole, ...);
    the component's resource name when None. Two operators in one cluster need two names:
    the ClusterRole is cluster-wide."""
    namespace: pulumi.Input[str] | None = DEFAULT_NAMESPACE
    """``ray-system`` when None."""
    create_namespace: bool | None = None
    """None: create it unless the RBAC is namespaced (a Namespace is cluster-scoped)."""
    install_crds: bool | None = None
    """None: install the four ray.io/v1 CRDs unless the RBAC is namespaced (CRDs are
    cluster-scoped: install them from a cluster-admin stack, e.g. another RayOperator)."""
    retain_crds_on_delete: bool | None = True
    """Deleting a CRD deletes every object of its kind in the cluster, other stacks'
    included; like Helm, ``pulumi destroy`` leaves the CRDs in place unless this is False."""
    image: pulumi.Input[str] | None = None
    """Required: the operator image in your registry, best pinned by digest
    (``registry.example/pulumi-ray/operator@sha256:...``). ``make image`` builds it and
    ``python -m hack.image push REF`` pushes it and prints that reference
    (docs/releasing.md). A ``None`` here is refused, naming these steps."""
    image_pull_policy: PullPolicy | None = None
    image_pull_secrets: Sequence[str] | None = ()
    """Names of docker-registry Secrets in the operator's namespace, for a private registry."""
    replicas: int | None = 1
    """More than one runs hot standbys behind the leader Lease, with a PodDisruptionBudget."""
    resources: Mapping[str, Mapping[str, pulumi.Input[str]]] | None = None
    """``{"requests": {...}, "limits": {...}}``; ``DEFAULT_RESOURCES`` when None."""
    log_format: LogFormat | None = None
    log_level: LogLevel | None = None
    feature_gates: Mapping[str, bool] | None = None
    """``{"RayCronJob": True}``, KubeRay's gate names (in Python a ``FeatureGates`` or the
    flag's ``"RayCronJob=true"`` work too)."""
    qps: float | None = None
    burst: int | None = None
    reconcile_concurrency: int | None = None
    watch_namespaces: Sequence[str] | None = ()
    """Namespaces the operator watches; empty means all."""
    cluster_scoped_rbac: bool | None = True
    """False: a Role and RoleBinding in each of ``watch_namespaces`` and no cluster-scoped
    object at all, for a deployer who holds only namespace rights."""
    leader_election: bool | None = True
    """On even with one replica: during a rolling update the old and the new pod overlap,
    and without the Lease both would reconcile the same objects."""
    use_kubernetes_proxy: bool | None = False
    """``--use-kubernetes-proxy``: reach Ray dashboards and serve proxies through the API
    server (an operator outside the pod network). Only then does the ClusterRole grant
    ``services/proxy`` and ``pods/proxy``, which reach any pod's ports in the cluster."""
    env: Mapping[str, pulumi.Input[str]] | None = None
    """KubeRay's operator environment variables (e.g. ``ENABLE_INIT_CONTAINER_INJECTION``)."""
    service_monitor: bool | None = False
    """A monitoring.coreos.com/v1 ServiceMonitor (needs the Prometheus Operator's CRDs)."""
    prometheus_rule: bool | None = False
    """A PrometheusRule with the alerts of ``monitoring.ALERTS``."""
    monitoring_labels: Mapping[str, str] | None = None
    """Extra labels on both, for a Prometheus that selects by label (e.g. ``release``)."""
    service_monitor_interval: str | None = None
    """How often Prometheus scrapes (``"30s"`` when None)."""
    service_monitor_namespace: pulumi.Input[str] | None = None
    """Where the ServiceMonitor lives, for a Prometheus that reads only its own namespace
    (e.g. ``monitoring``); the operator's namespace when None."""
    grafana_dashboards: bool | None = False
    """Four Grafana boards (RayClusters, RayJobs, RayServices, the operator itself), one
    ConfigMap each, for the dashboard sidecar of kube-prometheus-stack's Grafana
    (docs/observability.md). One RayOperator per Grafana: the boards show every operator
    its Prometheus scrapes."""
    grafana_dashboard_labels: Mapping[str, str] | None = None
    """The labels the sidecar selects ConfigMaps by (its ``label`` and ``labelValue``);
    ``{"grafana_dashboard": "1"}``, kube-prometheus-stack's, when None."""
    grafana_dashboard_namespace: pulumi.Input[str] | None = None
    """Where the boards' ConfigMaps live: the sidecar reads only Grafana's own namespace
    unless its ``searchNamespace`` says otherwise (e.g. ``monitoring``); the operator's
    namespace when None."""
    grafana_folder: str | None = None
    """The Grafana folder of the boards, as the ``grafana_folder`` annotation (read when the
    sidecar's ``folderAnnotation`` is ``grafana_folder``); none when None."""
    labels: Mapping[str, str] | None = None
    """Extra labels on every object the component makes but the CRDs (kept as committed),
    the pods included (cost centre, team). Our ``app.kubernetes.io/*`` labels select the
    pods and cannot be overridden."""
    annotations: Mapping[str, str] | None = None
    """Extra annotations on every object the component makes but the CRDs (not on the
    pods: see ``pod_annotations``)."""
    pod_labels: Mapping[str, str] | None = None
    """Extra labels on the operator's pods only."""
    pod_annotations: Mapping[str, str] | None = None
    """Annotations on the operator's pods (a service mesh's or a log shipper's switches)."""
    node_selector: Mapping[str, str] | None = None
    tolerations: Sequence[Mapping[str, Any]] | None = None
    """Tolerations as in a pod spec, e.g. for a tainted system node pool (in Python
    ``k8s.core.v1.TolerationArgs`` work too)."""
    affinity: Mapping[str, Any] | None = None
    """The pod's affinity as in a pod spec (in Python ``k8s.core.v1.AffinityArgs`` too)."""
    priority_class_name: str | None = None
    """E.g. ``system-cluster-critical``, so Ray pods never preempt their operator."""
    pod_security_context: Mapping[str, Any] | None = None
    """The pod's securityContext in its YAML form (camelCase), merged key by key over
    ours (``runAsNonRoot: true``, ``seccompProfile: RuntimeDefault``): adding ``fsGroup``
    keeps both, and only an explicit ``runAsNonRoot: False`` turns it off."""
    service_account: OperatorServiceAccount | None = None
    """Create the ServiceAccount (default) with annotations (IRSA, workload identity), or
    use an existing one by name."""
    operator_config: Mapping[str, Any] | None = None
    """KubeRay's operator configuration file (``config.ray.io/v1alpha1`` ``Configuration``,
    camelCase: ``defaultContainerEnvs``, ``defaultPodLabels``, ``headSidecarContainers``,
    ``batchScheduler`` (volcano, yunikorn, scheduler-plugins, kai-scheduler: the RBAC
    then grants that scheduler's PodGroups), ...), rendered into a ConfigMap and passed
    as ``--config``. Checked at preview with the operator's own parser. The settings this
    component owns (ports, metrics, leader election, watched namespaces, proxy, qps, burst,
    concurrency) come from their args and are written into the file, since with
    ``--config`` the operator ignores those flags."""


@dataclass(frozen=True)
class Plan:
    """The arguments with every default settled; what the builders read."""

    resource_name: str
    base_name: str
    namespace: pulumi.Input[str]
    create_namespace: bool
    install_crds: bool
    retain_crds_on_delete: bool
    image: pulumi.Input[str]
    image_pull_policy: PullPolicy | None
    image_pull_secrets: tuple[str, ...]
    replicas: int
    resources: Mapping[str, Mapping[str, pulumi.Input[str]]]
    feature_gates: FeatureGates
    feature_gates_given: bool
    log_format: LogFormat | None
    log_level: LogLevel | None
    qps: float | None
    burst: int | None
    reconcile_concurrency: int | None
    watch_namespaces: tuple[str, ...]
    cluster_scoped_rbac: bool
    leader_election: bool
    use_kubernetes_proxy: bool
    env: tuple[tuple[str, pulumi.Input[str]], ...]
    service_monitor: bool
    prometheus_rule: bool
    monitoring_labels: Mapping[str, str]
    service_monitor_interval: str
    service_monitor_namespace: pulumi.Input[str] | None
    """None: the operator's namespace."""
    grafana_dashboards: bool
    grafana_dashboard_labels: Mapping[str, str]
    grafana_dashboard_namespace: pulumi.Input[str] | None
    """None: the operator's namespace."""
    grafana_folder: str | None
    extra_labels: Mapping[str, str]
    extra_annotations: Mapping[str, str]
    pod_labels: Mapping[str, str]
    pod_annotations: Mapping[str, str]
    node_selector: Mapping[str, str] | None
    tolerations: list[Any] | None
    affinity: Any
    priority_class_name: str | None
    pod_security_context: Mapping[str, object]
    create_service_account: bool
    service_account_name: str
    service_account_annotations: Mapping[str, str]
    batch_scheduler: str
    """The batch scheduler ``operator_config`` chooses (``batchScheduler``; volcano for the
    deprecated ``enableBatchScheduler``); "" = none. Its PodGroup rules are granted only then."""
    operator_config: str | None
    """The configuration file's text, the component's own settings folded in; None: no
    ``--config``, the settings are flags."""
    config_map_name: str | None
    """Named after the file's content, so a change replaces the (immutable) ConfigMap and
    rolls the pods, which read the file only at start."""

    @property
    def selector_labels(self) -> dict[str, str]:
        """What the Deployment, Service, PDB and ServiceMonitor select the pods by."""
        return {
            "app.kubernetes.io/name": "ray-operator",
            "app.kubernetes.io/instance": self.base_name,
        }

    @property
    def labels(self) -> dict[str, str]:
        """Every object's labels: the user's ``labels``, then ours."""
        return {
            **self.extra_labels,
            **self.selector_labels,
            "app.kubernetes.io/component": "operator",
            "app.kubernetes.io/managed-by": "pulumi",
        }

    def metadata(
        self,
        name: pulumi.Input[str],
        namespace: pulumi.Input[str] | None = None,
        extra_labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
    ) -> k8s.meta.v1.ObjectMetaArgs:
        """Metadata of every object: our labels and the user's ``labels`` and
        ``annotations`` (absent when there are none, so nothing changes without them)."""
        return k8s.meta.v1.ObjectMetaArgs(
            name=name,
            namespace=namespace,
            labels={**self.labels, **(extra_labels or {})},
            annotations={**self.extra_annotations, **(annotations or {})} or None,
        )

    @property
    def metrics_service_name(self) -> str:
        return f"{self.base_name}{METRICS_SUFFIX}"

    @property
    def leader_election_id(self) -> str:
        # One Lease per operator, so two operators in one namespace never share it.
        return f"{self.base_name}-leader"

    def child(
        self, parent: pulumi.Resource, depends_on: Sequence[pulumi.Resource] = ()
    ) -> pulumi.ResourceOptions:
        """Options of every child of the component, which inherits its provider."""
        return pulumi.ResourceOptions(parent=parent, depends_on=list(depends_on))


class _Named(Protocol):
    @property
    def metadata(self) -> pulumi.Output[Any]: ...


def name_of(resource: _Named) -> pulumi.Output[str]:
    """metadata.name read back from the resource, so whoever uses it waits for it."""
    return resource.metadata.apply(lambda meta: str(meta.name))
