"""``RayOperatorArgs``, what a user gives, and ``Plan``, what the builders read.

A ``Plan`` is the same knobs with every default decided by ``checks.settle``
(which RBAC mode, whether the namespace and the CRDs are ours, the feature gates), so
no builder decides anything twice.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final, Literal, Protocol

import pulumi
import pulumi_kubernetes as k8s

from operator_runtime.api import FeatureGates

__all__ = [
    "DEFAULT_IMAGE",
    "DEFAULT_NAMESPACE",
    "DEFAULT_RESOURCES",
    "METRICS_SUFFIX",
    "SELF_DELETING_RAYJOB_ENV",
    "Plan",
    "RayOperatorArgs",
    "name_of",
]


def _package_version() -> str:
    try:
        return importlib.metadata.version("pulumi-ray")
    except importlib.metadata.PackageNotFoundError:
        # A source checkout that was never installed has no version to pin.
        return "latest"


DEFAULT_IMAGE: Final = f"pulumi-ray/operator:{_package_version()}"
"""The image `make image` builds (hack/image), tagged with this package's version, so
the components and the operator they deploy come from one release."""
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

LogFormat = Literal["json", "console"]
LogLevel = Literal["debug", "info", "warning", "error"]
PullPolicy = Literal["Always", "IfNotPresent", "Never"]


@dataclass(frozen=True)
class RayOperatorArgs:
    """What to deploy. ``None`` means the operator's own default (the flag is not passed),
    so a default lives in one place: ``python -m operator_runtime``."""

    name: str | None = None
    """Base name of the Kubernetes objects (Deployment, ServiceAccount, ClusterRole, ...);
    the component's resource name when None. Two operators in one cluster need two names:
    the ClusterRole is cluster-wide."""
    namespace: pulumi.Input[str] = DEFAULT_NAMESPACE
    create_namespace: bool | None = None
    """None: create it unless the RBAC is namespaced (a Namespace is cluster-scoped)."""
    install_crds: bool | None = None
    """None: install the four ray.io/v1 CRDs unless the RBAC is namespaced (CRDs are
    cluster-scoped: install them from a cluster-admin stack, e.g. another RayOperator)."""
    retain_crds_on_delete: bool = True
    """Deleting a CRD deletes every object of its kind in the cluster, other stacks'
    included; like Helm, ``pulumi destroy`` leaves the CRDs in place unless this is False."""
    image: pulumi.Input[str] = DEFAULT_IMAGE
    image_pull_policy: PullPolicy | None = None
    replicas: int = 1
    """More than one runs hot standbys behind the leader Lease, with a PodDisruptionBudget."""
    resources: Mapping[str, Mapping[str, pulumi.Input[str]]] | None = None
    """``{"requests": {...}, "limits": {...}}``; ``DEFAULT_RESOURCES`` when None."""
    log_format: LogFormat | None = None
    log_level: LogLevel | None = None
    feature_gates: FeatureGates | Mapping[str, bool] | str | None = None
    """A ``FeatureGates``, ``{"RayCronJob": True}`` or ``"RayCronJob=true"`` (KubeRay names)."""
    qps: float | None = None
    burst: int | None = None
    reconcile_concurrency: int | None = None
    watch_namespaces: Sequence[str] = ()
    """Namespaces the operator watches; empty means all."""
    cluster_scoped_rbac: bool = True
    """False: a Role and RoleBinding in each of ``watch_namespaces`` and no cluster-scoped
    object at all, for a deployer who holds only namespace rights."""
    leader_election: bool = True
    """On even with one replica: during a rolling update the old and the new pod overlap,
    and without the Lease both would reconcile the same objects."""
    use_kubernetes_proxy: bool = False
    """``--use-kubernetes-proxy``: reach Ray dashboards and serve proxies through the API
    server (an operator outside the pod network). Only then does the ClusterRole grant
    ``services/proxy`` and ``pods/proxy``, which reach any pod's ports in the cluster."""
    env: Mapping[str, pulumi.Input[str]] | None = None
    """KubeRay's operator environment variables (e.g. ``ENABLE_INIT_CONTAINER_INJECTION``)."""
    service_monitor: bool = False
    """A monitoring.coreos.com/v1 ServiceMonitor (needs the Prometheus Operator's CRDs)."""
    prometheus_rule: bool = False
    """A PrometheusRule with the alerts of ``monitoring.ALERTS``."""
    monitoring_labels: Mapping[str, str] | None = None
    """Extra labels on both, for a Prometheus that selects by label (e.g. ``release``)."""
    provider: pulumi.ProviderResource | None = None


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
    provider: pulumi.ProviderResource | None

    @property
    def selector_labels(self) -> dict[str, str]:
        """What the Deployment, Service, PDB and ServiceMonitor select the pods by."""
        return {
            "app.kubernetes.io/name": "ray-operator",
            "app.kubernetes.io/instance": self.base_name,
        }

    @property
    def labels(self) -> dict[str, str]:
        return {
            **self.selector_labels,
            "app.kubernetes.io/component": "operator",
            "app.kubernetes.io/managed-by": "pulumi",
        }

    def metadata(
        self,
        name: str,
        namespace: pulumi.Input[str] | None = None,
        extra_labels: Mapping[str, str] | None = None,
    ) -> k8s.meta.v1.ObjectMetaArgs:
        return k8s.meta.v1.ObjectMetaArgs(
            name=name, namespace=namespace, labels={**self.labels, **(extra_labels or {})}
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
        """Options of every child of the component."""
        return pulumi.ResourceOptions(
            parent=parent, provider=self.provider, depends_on=list(depends_on)
        )


class _Named(Protocol):
    @property
    def metadata(self) -> pulumi.Output[Any]: ...


def name_of(resource: _Named) -> pulumi.Output[str]:
    """metadata.name read back from the resource, so whoever uses it waits for it."""
    return resource.metadata.apply(lambda meta: str(meta.name))
