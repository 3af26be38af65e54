"""Typed ``status`` outputs of the components: one ``TypedDict`` per
status model of ``operator_runtime.api``, keyed by wire (camelCase) names, as the
Kubernetes provider reads a status. GENERATED from those models by ``python -m
components.statustypes``; do not edit (its ``--check`` fails on a hand edit)."""

from typing import TypedDict

__all__ = [
    "AppStatus",
    "Condition",
    "HeadInfo",
    "RayClusterStatus",
    "RayCronJobStatus",
    "RayJobStatus",
    "RayJobStatusInfo",
    "RayServiceStatus",
    "RayServiceStatuses",
    "ServeDeploymentStatus",
]


class HeadInfo(TypedDict, total=False):
    """Where the head can be reached."""

    podIP: str | None
    """Head pod IP."""

    serviceIP: str | None
    """Head Service IP (pod IP when headless)."""

    podName: str | None
    """Head pod name."""

    serviceName: str | None
    """Head Service name."""


class Condition(TypedDict, total=False):
    """One status condition (``metav1.Condition``)."""

    type: str | None
    """Condition type in CamelCase, e.g. HeadPodReady."""

    status: str | None
    """True, False or Unknown."""

    observedGeneration: int | None
    """Generation the condition was computed from."""

    lastTransitionTime: str | None
    """When the status last changed."""

    reason: str | None
    """Machine-readable CamelCase reason."""

    message: str | None
    """Human-readable detail (may be empty)."""


class RayClusterStatus(TypedDict, total=False):
    """Observed state of a RayCluster."""

    state: str | None
    """Deprecated summary: ready or suspended. Use conditions."""

    desiredCPU: str | None
    """CPUs requested by all desired pods."""

    desiredMemory: str | None
    """Memory requested by all desired pods."""

    desiredGPU: str | None
    """GPUs requested by all desired pods."""

    desiredTPU: str | None
    """TPUs requested by all desired pods."""

    lastUpdateTime: str | None
    """When the status was last written."""

    stateTransitionTimes: dict[str, str] | None
    """When each state was last entered."""

    endpoints: dict[str, str] | None
    """Head Service port name to port (nodePort if any)."""

    head: HeadInfo | None
    """Head pod and Service addresses."""

    reason: str | None
    """Why the state is what it is."""

    conditions: list[Condition] | None
    """Latest observations of the object's state, one per condition type."""

    readyWorkerReplicas: int | None
    """Worker pods that are Ready."""

    availableWorkerReplicas: int | None
    """Worker pods that are Running."""

    desiredWorkerReplicas: int | None
    """Sum of replicas x numOfHosts over the groups."""

    minWorkerReplicas: int | None
    """Sum of minReplicas x numOfHosts over the groups."""

    maxWorkerReplicas: int | None
    """Sum of maxReplicas x numOfHosts over the groups."""

    observedGeneration: int | None
    """Generation this status was computed from."""


class RayJobStatusInfo(TypedDict, total=False):
    """Start and end times of the Ray job as the dashboard reports them."""

    startTime: str | None
    """When the Ray job started."""

    endTime: str | None
    """When the Ray job ended."""


class RayJobStatus(TypedDict, total=False):
    """Observed state of a RayJob."""

    rayJobInfo: RayJobStatusInfo | None
    """Times reported by Ray."""

    jobId: str | None
    """Submission ID in use."""

    rayClusterName: str | None
    """Cluster running the job."""

    dashboardURL: str | None
    """Dashboard host:port, no scheme."""

    jobStatus: str | None
    """Status of the Ray job."""

    jobDeploymentStatus: str | None
    """Lifecycle state of the RayJob."""

    reason: str | None
    """Why it failed."""

    message: str | None
    """Detail for humans."""

    startTime: str | None
    """When the RayJob started."""

    endTime: str | None
    """When the RayJob reached an end."""

    succeeded: int | None
    """Successful attempts."""

    failed: int | None
    """Failed attempts."""

    rayClusterStatus: RayClusterStatus | None
    """Copy of the cluster's status."""

    jobStatusCheckFailureStartTime: str | None
    """When querying the job status started failing."""

    observedGeneration: int | None
    """Generation this status was computed from."""


class ServeDeploymentStatus(TypedDict, total=False):
    """Status of one Serve deployment."""

    status: str | None
    """UPDATING, HEALTHY or UNHEALTHY."""

    message: str | None
    """Detail from Ray Serve."""


class AppStatus(TypedDict, total=False):
    """Status of one Serve application."""

    serveDeploymentStatuses: dict[str, ServeDeploymentStatus] | None
    """Deployments by name."""

    status: str | None
    """RUNNING, DEPLOYING, ..."""

    message: str | None
    """Detail from Ray Serve."""


class RayServiceStatus(TypedDict, total=False):
    """State of one side (active or pending) of a RayService."""

    applicationStatuses: dict[str, AppStatus] | None
    """Serve applications by name."""

    targetCapacity: int | None
    """Serve target_capacity of this cluster, in percent."""

    trafficRoutedPercent: int | None
    """Share of traffic routed to this cluster, in percent."""

    lastTrafficMigratedTime: str | None
    """When trafficRoutedPercent last changed."""

    rayClusterName: str | None
    """Name of the cluster."""

    rayClusterStatus: RayClusterStatus | None
    """Copy of the cluster's status."""


class RayServiceStatuses(TypedDict, total=False):
    """Observed state of a RayService."""

    conditions: list[Condition] | None
    """Latest observations of the object's state, one per condition type."""

    lastUpdateTime: str | None
    """When last written."""

    serviceStatus: str | None
    """Deprecated: Running when Ready, else empty."""

    activeServiceStatus: RayServiceStatus | None
    """The cluster serving traffic."""

    pendingServiceStatus: RayServiceStatus | None
    """The cluster being prepared to take over."""

    numServeEndpoints: int | None
    """Ray pods currently selected by the serve Service."""

    observedGeneration: int | None
    """Generation this status was computed from."""


class RayCronJobStatus(TypedDict, total=False):
    """Observed state of a RayCronJob."""

    lastScheduleTime: str | None
    """Scheduled time of the last RayJob created."""
