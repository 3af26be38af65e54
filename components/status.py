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

    podIP: str
    """Head pod IP."""

    serviceIP: str
    """Head Service IP (pod IP when headless)."""

    podName: str
    """Head pod name."""

    serviceName: str
    """Head Service name."""


class Condition(TypedDict, total=False):
    """One status condition (``metav1.Condition``)."""

    type: str
    """Condition type in CamelCase, e.g. HeadPodReady."""

    status: str
    """True, False or Unknown."""

    observedGeneration: int
    """Generation the condition was computed from."""

    lastTransitionTime: str
    """When the status last changed."""

    reason: str
    """Machine-readable CamelCase reason."""

    message: str
    """Human-readable detail (may be empty)."""


class RayClusterStatus(TypedDict, total=False):
    """Observed state of a RayCluster."""

    state: str
    """Deprecated summary: ready or suspended. Use conditions."""

    desiredCPU: str
    """CPUs requested by all desired pods."""

    desiredMemory: str
    """Memory requested by all desired pods."""

    desiredGPU: str
    """GPUs requested by all desired pods."""

    desiredTPU: str
    """TPUs requested by all desired pods."""

    lastUpdateTime: str
    """When the status was last written."""

    stateTransitionTimes: dict[str, str]
    """When each state was last entered."""

    endpoints: dict[str, str]
    """Head Service port name to port (nodePort if any)."""

    head: HeadInfo
    """Head pod and Service addresses."""

    reason: str
    """Why the state is what it is."""

    conditions: list[Condition]
    """Latest observations of the object's state, one per condition type."""

    readyWorkerReplicas: int
    """Worker pods that are Ready."""

    availableWorkerReplicas: int
    """Worker pods that are Running."""

    desiredWorkerReplicas: int
    """Sum of replicas x numOfHosts over the groups."""

    minWorkerReplicas: int
    """Sum of minReplicas x numOfHosts over the groups."""

    maxWorkerReplicas: int
    """Sum of maxReplicas x numOfHosts over the groups."""

    observedGeneration: int
    """Generation this status was computed from."""


class RayJobStatusInfo(TypedDict, total=False):
    """Start and end times of the Ray job as the dashboard reports them."""

    startTime: str
    """When the Ray job started."""

    endTime: str
    """When the Ray job ended."""


class RayJobStatus(TypedDict, total=False):
    """Observed state of a RayJob."""

    rayJobInfo: RayJobStatusInfo
    """Times reported by Ray."""

    jobId: str
    """Submission ID in use."""

    rayClusterName: str
    """Cluster running the job."""

    dashboardURL: str
    """Dashboard host:port, no scheme."""

    jobStatus: str
    """Status of the Ray job."""

    jobDeploymentStatus: str
    """Lifecycle state of the RayJob."""

    reason: str
    """Why it failed."""

    message: str
    """Detail for humans."""

    startTime: str
    """When the RayJob started."""

    endTime: str
    """When the RayJob reached an end."""

    succeeded: int
    """Successful attempts."""

    failed: int
    """Failed attempts."""

    rayClusterStatus: RayClusterStatus
    """Copy of the cluster's status."""

    jobStatusCheckFailureStartTime: str
    """When querying the job status started failing."""

    observedGeneration: int
    """Generation this status was computed from."""


class ServeDeploymentStatus(TypedDict, total=False):
    """Status of one Serve deployment."""

    status: str
    """UPDATING, HEALTHY or UNHEALTHY."""

    message: str
    """Detail from Ray Serve."""


class AppStatus(TypedDict, total=False):
    """Status of one Serve application."""

    serveDeploymentStatuses: dict[str, ServeDeploymentStatus]
    """Deployments by name."""

    status: str
    """RUNNING, DEPLOYING, ..."""

    message: str
    """Detail from Ray Serve."""


class RayServiceStatus(TypedDict, total=False):
    """State of one side (active or pending) of a RayService."""

    applicationStatuses: dict[str, AppStatus]
    """Serve applications by name."""

    targetCapacity: int
    """Serve target_capacity of this cluster, in percent."""

    trafficRoutedPercent: int
    """Share of traffic routed to this cluster, in percent."""

    lastTrafficMigratedTime: str
    """When trafficRoutedPercent last changed."""

    rayClusterName: str
    """Name of the cluster."""

    rayClusterStatus: RayClusterStatus
    """Copy of the cluster's status."""


class RayServiceStatuses(TypedDict, total=False):
    """Observed state of a RayService."""

    conditions: list[Condition]
    """Latest observations of the object's state, one per condition type."""

    lastUpdateTime: str
    """When last written."""

    serviceStatus: str
    """Deprecated: Running when Ready, else empty."""

    activeServiceStatus: RayServiceStatus
    """The cluster serving traffic."""

    pendingServiceStatus: RayServiceStatus
    """The cluster being prepared to take over."""

    numServeEndpoints: int
    """Ray pods currently selected by the serve Service."""

    observedGeneration: int
    """Generation this status was computed from."""


class RayCronJobStatus(TypedDict, total=False):
    """Observed state of a RayCronJob."""

    lastScheduleTime: str
    """Scheduled time of the last RayJob created."""
