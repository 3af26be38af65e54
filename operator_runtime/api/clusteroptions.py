"""Optional feature blocks of a RayCluster spec: autoscaler, GCS fault tolerance,
authentication, network policy, TLS, history server, ingress and upgrade strategy.

Kept apart from ``raycluster.py`` so each module stays readable; all of them are
re-exported from ``operator_runtime.api``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from operator_runtime.api._base import KubeModel
from operator_runtime.api.common import (
    EnvFromSource,
    EnvVar,
    EnvVarSource,
    IngressTLS,
    Int32,
    NetworkPolicyEgressRule,
    NetworkPolicyIngressRule,
    Quantity,
    ResourceRequirements,
    SecurityContext,
    VolumeMount,
    cel_rules,
    object_name_schema,
)

RayClusterUpgradeType = Literal["Recreate", "None"]
AuthMode = Literal["disabled", "token"]
GcsFaultToleranceBackend = Literal["redis", "rocksdb"]
GcsStorageDeletionPolicy = Literal["DeleteWithCluster", "Retain"]
NetworkPolicyMode = Literal["DenyAll", "DenyAllIngress", "DenyAllEgress"]
IngressPathType = Literal["Exact", "Prefix", "ImplementationSpecific"]
UpscalingMode = Literal["Default", "Aggressive", "Conservative"]
AutoscalerVersion = Literal["v1", "v2"]


class RayClusterUpgradeStrategy(KubeModel):
    """How pods are replaced when the cluster spec changes."""

    type: RayClusterUpgradeType | None = Field(
        default=None,
        description="Recreate deletes all pods when the pod spec changes; None leaves them.",
    )


class AuthOptions(KubeModel):
    """Authentication for the Ray cluster's dashboard and GCS."""

    enable_k8s_token_auth: bool | None = Field(
        default=None,
        alias="enableK8sTokenAuth",
        description=(
            "Let Ray check requests against the Kubernetes API with service-account "
            "tokens (Ray >= 2.55; RayCluster only)."
        ),
    )
    secret_name: str | None = Field(
        default=None,
        description="Existing Secret holding the token under key auth_token; skips generation.",
        json_schema_extra=object_name_schema(),
    )
    mode: AuthMode | None = Field(
        default=None, description="disabled or token; token turns authentication on."
    )


class RedisCredential(KubeModel):
    """A Redis username or password, inline or from a Secret/ConfigMap reference."""

    value_from: EnvVarSource | None = Field(
        default=None, description="Where to read the value from (as for an env var)."
    )
    value: str | None = Field(default=None, description="The literal value.")


class GcsEmbeddedStorage(KubeModel):
    """The volume behind the embedded RocksDB GCS store."""

    claim_name: str | None = Field(
        default=None,
        description="Use this existing PVC as-is instead of an operator-managed one.",
        json_schema_extra=object_name_schema(),
    )
    size: Quantity | None = Field(
        default=None, description="Size of the operator-managed PVC (default 1Gi)."
    )
    storage_class_name: str | None = Field(
        default=None, description="StorageClass of the operator-managed PVC."
    )
    access_modes: list[str] | None = Field(
        default=None, description="Access modes of the operator-managed PVC (default RWO)."
    )
    sub_path: str | None = Field(default=None, description="Mount this sub-directory only.")
    deletion_policy: GcsStorageDeletionPolicy | None = Field(
        default=None,
        description="DeleteWithCluster (default) or Retain the managed PVC on cluster deletion.",
    )


class GcsFaultToleranceOptions(KubeModel):
    """GCS fault tolerance: persist GCS metadata in Redis or an embedded RocksDB."""

    backend: GcsFaultToleranceBackend | None = Field(
        default=None,
        description="redis (default) or rocksdb (feature gate). Immutable.",
        json_schema_extra=cel_rules(
            ("self == oldSelf", "gcsFaultToleranceOptions.backend is immutable")
        ),
    )
    redis_username: RedisCredential | None = Field(default=None, description="Redis username.")
    redis_password: RedisCredential | None = Field(default=None, description="Redis password.")
    external_storage_namespace: str | None = Field(
        default=None, description="Key namespace in Redis (defaults to the cluster UID)."
    )
    redis_address: str | None = Field(
        default=None, description="Redis address host:port (redis backend)."
    )
    storage: GcsEmbeddedStorage | None = Field(
        default=None, description="Volume for the rocksdb backend."
    )


class CollectorOptions(KubeModel):
    """The history-server collector sidecar."""

    image: str | None = Field(default=None, description="Collector container image.")
    image_pull_policy: str | None = Field(
        default=None, description="Always, IfNotPresent or Never."
    )
    resources: ResourceRequirements | None = Field(
        default=None, description="Collector container resources."
    )
    env: list[EnvVar] | None = Field(
        default=None, description="Extra env vars, including the storage backend settings."
    )


class HistoryServerOptions(KubeModel):
    """Ship Ray logs and events to a history server (feature gate)."""

    collector_options: CollectorOptions | None = Field(
        default=None, description="Collector sidecar settings."
    )


class NetworkPolicyRules(KubeModel):
    """Extra rules appended to a generated NetworkPolicy."""

    ingress_rules: list[NetworkPolicyIngressRule] | None = Field(
        default=None, description="Extra ingress rules (modes that restrict ingress only)."
    )
    egress_rules: list[NetworkPolicyEgressRule] | None = Field(
        default=None,
        description="Extra egress rules (modes that restrict egress only); add DNS here.",
    )


class WorkerGroupNetworkPolicyRules(NetworkPolicyRules):
    """Network policy rules for one worker group, replacing the generic worker rules."""

    group_name: str = Field(description="Worker group these rules apply to.")


class NetworkPolicyConfig(KubeModel):
    """Network isolation for the cluster's pods (feature gate)."""

    mode: NetworkPolicyMode = Field(
        default="DenyAll",
        description="DenyAll, DenyAllIngress or DenyAllEgress; intra-cluster traffic is kept.",
    )
    head: NetworkPolicyRules | None = Field(default=None, description="Extra head pod rules.")
    worker: NetworkPolicyRules | None = Field(
        default=None, description="Extra worker rules, for groups without their own entry."
    )
    worker_groups: list[WorkerGroupNetworkPolicyRules] | None = Field(
        default=None,
        description="Per-group rules keyed by groupName.",
        json_schema_extra={
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["groupName"],
        },
    )


class TLSOptions(KubeModel):
    """Mutual TLS between Ray pods, certificates from cert-manager (feature gate)."""

    enabled: bool | None = Field(default=None, description="Turn mTLS on.")


class IngressOptions(KubeModel):
    """The Ingress generated for the head's dashboard."""

    host: str | None = Field(default=None, description="Host to match; any host when unset.")
    path: str | None = Field(default=None, description="HTTP path (default /).")
    path_type: IngressPathType | None = Field(
        default=None, description="Exact, Prefix (default) or ImplementationSpecific."
    )
    tls: list[IngressTLS] | None = Field(default=None, description="TLS termination.")


class AutoscalerOptions(KubeModel):
    """Settings of the in-tree Ray autoscaler sidecar."""

    resources: ResourceRequirements | None = Field(
        default=None, description="Autoscaler container resources (default 500m/512Mi)."
    )
    image: str | None = Field(default=None, description="Autoscaler image override.")
    image_pull_policy: str | None = Field(
        default=None, description="Always, IfNotPresent or Never."
    )
    security_context: SecurityContext | None = Field(
        default=None, description="Autoscaler container security context."
    )
    idle_timeout_seconds: Int32 | None = Field(
        default=None, description="Seconds an idle worker lives before removal (Ray: 60)."
    )
    upscaling_mode: UpscalingMode | None = Field(
        default=None, description="Conservative rate-limits scale-up; Default/Aggressive don't."
    )
    version: AutoscalerVersion | None = Field(
        default=None, description="Autoscaler v1 or v2; unset lets the Ray version decide."
    )
    env: list[EnvVar] | None = Field(default=None, description="Extra env vars.")
    env_from: list[EnvFromSource] | None = Field(default=None, description="Extra env sources.")
    volume_mounts: list[VolumeMount] | None = Field(default=None, description="Extra mounts.")
    command: list[str] | None = Field(default=None, description="Command override.")
    args: list[str] | None = Field(default=None, description="Args override.")
