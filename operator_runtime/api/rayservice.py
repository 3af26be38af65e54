"""RayService (ray.io/v1): Ray Serve applications with zero-downtime cluster upgrades."""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field

from operator_runtime.api._base import KubeModel
from operator_runtime.api.common import (
    API_VERSION,
    Condition,
    Int32,
    Int64,
    ObjectMeta,
    ServiceObject,
    Time,
    conditions_field,
    managed_by_field,
    object_name_cel,
)
from operator_runtime.api.raycluster import RayClusterSpec, RayClusterStatus

RayServiceUpgradeType = Literal["NewCluster", "NewClusterWithIncrementalUpgrade", "None"]
"""Valid ``spec.upgradeStrategy.type`` values. The CRD leaves the field a free string
(as KubeRay's does); the validator rejects anything else."""
INCREMENTAL_UPGRADE: Final[RayServiceUpgradeType] = "NewClusterWithIncrementalUpgrade"

ServiceStatus = Literal["Running", ""]
"""The deprecated ``status.serviceStatus``: Running while Ready is True, else unset."""

ApplicationStatus = Literal[
    "NOT_STARTED", "DEPLOYING", "RUNNING", "DEPLOY_FAILED", "DELETING", "UNHEALTHY"
]
"""A Serve application's status, as Ray reports it and the status copies it (the field
and the dashboard client keep a free string, so a newer Ray's value is passed on)."""
APP_RUNNING: Final[ApplicationStatus] = "RUNNING"

RayServiceConditionType = Literal[
    "Ready", "UpgradeInProgress", "RollbackInProgress", "Suspending", "Suspended"
]
READY: Final[RayServiceConditionType] = "Ready"
UPGRADE_IN_PROGRESS: Final[RayServiceConditionType] = "UpgradeInProgress"
ROLLBACK_IN_PROGRESS: Final[RayServiceConditionType] = "RollbackInProgress"
SUSPENDING: Final[RayServiceConditionType] = "Suspending"
SUSPENDED: Final[RayServiceConditionType] = "Suspended"


class ClusterUpgradeOptions(KubeModel):
    """Pace of a NewClusterWithIncrementalUpgrade upgrade (Gateway API traffic shifting)."""

    max_surge_percent: Int32 | None = Field(
        default=100, description="Capacity step of the new cluster, in percent (0-100)."
    )
    step_size_percent: Int32 = Field(
        description="Traffic moved per interval, in percent (0-100, <= maxSurgePercent)."
    )
    interval_seconds: Int32 = Field(description="Seconds between traffic steps (> 0).")
    gateway_class_name: str = Field(description="GatewayClass for the generated Gateway.")


class RayServiceUpgradeStrategy(KubeModel):
    """How the RayService moves to a new cluster when the cluster spec changes."""

    type: str | None = Field(
        default=None,
        description="NewCluster (blue/green), NewClusterWithIncrementalUpgrade or None.",
    )
    cluster_upgrade_options: ClusterUpgradeOptions | None = Field(
        default=None, description="Required for NewClusterWithIncrementalUpgrade."
    )


_SERVICE_NAME_RULE: Final = object_name_cel(
    "self.metadata.name",
    "has(self.metadata) && has(self.metadata.name)",
    ".metadata.name",
    "metadata.name",
)
"""The operator reads and updates the serve Service by this name, so it must be one."""


class RayServiceSpec(KubeModel):
    """Desired state of a RayService."""

    ray_cluster_deletion_delay_seconds: Int32 | None = Field(
        default=None, ge=0, description="Seconds before an old cluster is deleted (default 60)."
    )
    service_unhealthy_second_threshold: Int32 | None = Field(
        default=None, description="Deprecated and ignored."
    )
    deployment_unhealthy_second_threshold: Int32 | None = Field(
        default=None, description="Deprecated and ignored."
    )
    serve_service: ServiceObject | None = Field(
        default=None,
        description="Custom serve Service; the operator forces its selector.",
        json_schema_extra={"x-kubernetes-validations": [_SERVICE_NAME_RULE]},
    )
    upgrade_strategy: RayServiceUpgradeStrategy | None = Field(
        default=None, description="How cluster spec changes roll out."
    )
    managed_by: str | None = managed_by_field()
    serve_config_v2: str | None = Field(
        default=None, alias="serveConfigV2", description="Serve config (applications), as YAML."
    )
    ray_cluster_config: RayClusterSpec = Field(
        alias="rayClusterConfig", description="Spec of the clusters to run Serve on."
    )
    exclude_head_pod_from_serve_svc: bool | None = Field(
        default=None, description="Never route serve traffic to the head pod."
    )
    suspend: bool | None = Field(
        default=None, description="Delete everything the RayService owns while true."
    )


class ServeDeploymentStatus(KubeModel):
    """Status of one Serve deployment."""

    status: str | None = Field(default=None, description="UPDATING, HEALTHY or UNHEALTHY.")
    message: str | None = Field(default=None, description="Detail from Ray Serve.")


class AppStatus(KubeModel):
    """Status of one Serve application."""

    deployments: dict[str, ServeDeploymentStatus] | None = Field(
        default=None, alias="serveDeploymentStatuses", description="Deployments by name."
    )
    status: str | None = Field(default=None, description="RUNNING, DEPLOYING, ...")
    message: str | None = Field(default=None, description="Detail from Ray Serve.")


class RayServiceStatus(KubeModel):
    """State of one side (active or pending) of a RayService."""

    applications: dict[str, AppStatus] | None = Field(
        default=None, alias="applicationStatuses", description="Serve applications by name."
    )
    target_capacity: Int32 | None = Field(
        default=None, description="Serve target_capacity of this cluster, in percent."
    )
    traffic_routed_percent: Int32 | None = Field(
        default=None, description="Share of traffic routed to this cluster, in percent."
    )
    last_traffic_migrated_time: Time | None = Field(
        default=None, description="When trafficRoutedPercent last changed."
    )
    ray_cluster_name: str | None = Field(default=None, description="Name of the cluster.")
    ray_cluster_status: RayClusterStatus | None = Field(
        default=None, description="Copy of the cluster's status."
    )


class RayServiceStatuses(KubeModel):
    """Observed state of a RayService."""

    conditions: list[Condition] | None = conditions_field()
    last_update_time: Time | None = Field(default=None, description="When last written.")
    service_status: str | None = Field(
        default=None, description="Deprecated: Running when Ready, else empty."
    )
    active_service_status: RayServiceStatus | None = Field(
        default=None, description="The cluster serving traffic."
    )
    pending_service_status: RayServiceStatus | None = Field(
        default=None, description="The cluster being prepared to take over."
    )
    num_serve_endpoints: Int32 | None = Field(
        default=None, description="Ray pods currently selected by the serve Service."
    )
    observed_generation: Int64 | None = Field(
        default=None, description="Generation this status was computed from."
    )


class RayService(KubeModel):
    """Ray Serve applications on a RayCluster that is replaced without downtime."""

    api_version: Literal["ray.io/v1"] = Field(default=API_VERSION, description="ray.io/v1.")
    kind: Literal["RayService"] = Field(default="RayService", description="RayService.")
    metadata: ObjectMeta = Field(default_factory=ObjectMeta, description="Object metadata.")
    spec: RayServiceSpec = Field(description="Desired state.")
    status: RayServiceStatuses | None = Field(default=None, description="Observed state.")
