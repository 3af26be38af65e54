"""RayCluster (ray.io/v1): a Ray head plus groups of workers, field for field as KubeRay v1.7.

The option blocks (autoscaler, GCS fault tolerance, auth, ...) live in
``clusteroptions.py``; this module holds the groups, the spec, the status and the object.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field
from pydantic.config import JsonDict

from operator_runtime.api._base import KubeModel
from operator_runtime.api.clusteroptions import (
    AuthOptions,
    AutoscalerOptions,
    GcsFaultToleranceOptions,
    HistoryServerOptions,
    IngressOptions,
    NetworkPolicyConfig,
    RayClusterUpgradeStrategy,
    TLSOptions,
)
from operator_runtime.api.common import (
    API_VERSION,
    INT32_MAX,
    Condition,
    Int32,
    Int64,
    ObjectMeta,
    PodTemplateSpec,
    Quantity,
    ServiceObject,
    StringMap,
    Time,
    conditions_field,
    managed_by_field,
    object_name_cel,
)

ClusterState = Literal["ready", "failed", "suspended"]
"""The deprecated ``status.state``; ``failed`` is never written any more."""
STATE_READY: Final[ClusterState] = "ready"
STATE_SUSPENDED: Final[ClusterState] = "suspended"

RayClusterConditionType = Literal[
    "RayClusterProvisioned",
    "HeadPodReady",
    "ReplicaFailure",
    "RayClusterSuspending",
    "RayClusterSuspended",
]
"""The RayCluster's conditions; the RayJob and RayService controllers and the validation
read some of them too, so each is named here, once."""
PROVISIONED: Final[RayClusterConditionType] = "RayClusterProvisioned"
HEAD_POD_READY: Final[RayClusterConditionType] = "HeadPodReady"
REPLICA_FAILURE: Final[RayClusterConditionType] = "ReplicaFailure"
SUSPENDING: Final[RayClusterConditionType] = "RayClusterSuspending"
SUSPENDED: Final[RayClusterConditionType] = "RayClusterSuspended"


_SERVICE_NAME_RULE: Final = object_name_cel(
    "self.metadata.name",
    "has(self.metadata) && has(self.metadata.name)",
    ".metadata.name",
    "metadata.name",
)
"""The operator reads and writes the Service by this name, so it must be one."""

NULL_FROM_GO_CLIENTS: Final[JsonDict] = {"nullable": True}
"""Accept ``null`` for a map KubeRay's Go type marshals without ``omitempty``. Kueue's
mutating webhook decodes a queued object into those types and patches an absent
``rayStartParams`` back as ``null``; the API server prunes such nulls only while decoding
a request body, never from a webhook's patch, so a non-nullable field made the create fail
with 422 (KubeRay v1.7.0's CRD too). The operator reads ``null`` as absent."""


class HeadGroupSpec(KubeModel):
    """The head pod and its Service."""

    template: PodTemplateSpec = Field(
        description="Pod template of the head; its first container runs Ray."
    )
    head_service: ServiceObject | None = Field(
        default=None,
        description="Custom head Service; the operator forces its selector.",
        json_schema_extra={"x-kubernetes-validations": [_SERVICE_NAME_RULE]},
    )
    enable_ingress: bool | None = Field(
        default=None, description="Create an Ingress (a Route on OpenShift) for the dashboard."
    )
    ingress_options: IngressOptions | None = Field(
        default=None, description="Host, path and TLS of that Ingress."
    )
    resources: StringMap | None = Field(
        default=None,
        description="Ray logical resources of the head (CPU, memory, GPU, custom); "
        "overrides rayStartParams, not container resources.",
    )
    labels: StringMap | None = Field(
        default=None, description="Ray node labels of the head, also added to the pod."
    )
    ray_start_params: StringMap | None = Field(
        default=None,
        description="Extra `ray start` flags without the leading --.",
        json_schema_extra=NULL_FROM_GO_CLIENTS,
    )
    service_type: str | None = Field(
        default=None, description="Head Service type: ClusterIP (default), NodePort, ..."
    )


class ScaleStrategy(KubeModel):
    """Which worker pods to remove on the next scale-down."""

    workers_to_delete: list[str] | None = Field(
        default=None, description="Names of worker pods to delete."
    )


class WorkerGroupSpec(KubeModel):
    """A group of identical worker pods."""

    suspend: bool | None = Field(
        default=None,
        description="Delete all pods of this group; set by RayJob's DeleteWorkers policy.",
    )
    group_name: str = Field(description="Name of the group, unique in the cluster.")
    replicas: Int32 | None = Field(default=0, description="Desired number of replicas.")
    min_replicas: Int32 | None = Field(default=0, description="Lower bound of replicas.")
    max_replicas: Int32 | None = Field(default=INT32_MAX, description="Upper bound of replicas.")
    idle_timeout_seconds: Int32 | None = Field(
        default=None,
        description="Seconds before autoscaler v2 removes an idle worker of this group.",
    )
    priority: Int32 | None = Field(
        default=0,
        description="Higher priority groups are scaled up first (autoscaler v2, Ray >= 2.56).",
    )
    resources: StringMap | None = Field(
        default=None,
        description="Ray logical resources of each worker; overrides rayStartParams.",
    )
    labels: StringMap | None = Field(
        default=None, description="Ray node labels of the workers, also added to the pods."
    )
    ray_start_params: StringMap | None = Field(
        default=None,
        description="Extra `ray start` flags without the leading --.",
        json_schema_extra=NULL_FROM_GO_CLIENTS,
    )
    template: PodTemplateSpec = Field(
        description="Pod template of a worker; its first container runs Ray."
    )
    scale_strategy: ScaleStrategy | None = Field(
        default=None, description="Pods to remove on scale-down."
    )
    num_of_hosts: Int32 = Field(
        default=1, description="Pods per replica (multi-host replicas, e.g. TPU slices)."
    )


class RayClusterSpec(KubeModel):
    """Desired state of a RayCluster."""

    upgrade_strategy: RayClusterUpgradeStrategy | None = Field(
        default=None, description="What to do with pods when the pod spec changes."
    )
    auth_options: AuthOptions | None = Field(default=None, description="Authentication.")
    suspend: bool | None = Field(
        default=None, description="Delete all pods while true; the spec is kept."
    )
    managed_by: str | None = managed_by_field()
    autoscaler_options: AutoscalerOptions | None = Field(
        default=None, description="Autoscaler sidecar settings."
    )
    head_service_annotations: StringMap | None = Field(
        default=None, description="Annotations for the head Service."
    )
    enable_in_tree_autoscaling: bool | None = Field(
        default=None, description="Run the Ray autoscaler as a head sidecar."
    )
    gcs_fault_tolerance_options: GcsFaultToleranceOptions | None = Field(
        default=None, description="Persist GCS state so the head can restart."
    )
    history_server_options: HistoryServerOptions | None = Field(
        default=None, description="History-server log collection (feature gate)."
    )
    network_policy: NetworkPolicyConfig | None = Field(
        default=None, description="NetworkPolicies isolating the pods (feature gate)."
    )
    tls_options: TLSOptions | None = Field(
        default=None, description="Mutual TLS between pods (feature gate, cert-manager)."
    )
    head_group_spec: HeadGroupSpec = Field(description="The head pod.")
    ray_version: str | None = Field(
        default=None, description="Ray version of the image, e.g. 2.52.0; gates features."
    )
    # A list map keyed by groupName, not KubeRay's atomic list: server-side apply then
    # tracks each group's fields on their own, so the autoscaler can own ``replicas``
    # while Pulumi owns the rest of the group (docs/conformance.md).
    worker_group_specs: list[WorkerGroupSpec] | None = Field(
        default=None,
        description="Worker groups, keyed by groupName.",
        json_schema_extra={
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["groupName"],
        },
    )


class HeadInfo(KubeModel):
    """Where the head can be reached."""

    pod_ip: str | None = Field(default=None, alias="podIP", description="Head pod IP.")
    service_ip: str | None = Field(
        default=None, alias="serviceIP", description="Head Service IP (pod IP when headless)."
    )
    pod_name: str | None = Field(default=None, description="Head pod name.")
    service_name: str | None = Field(default=None, description="Head Service name.")


class RayClusterStatus(KubeModel):
    """Observed state of a RayCluster."""

    state: str | None = Field(
        default=None, description="Deprecated summary: ready or suspended. Use conditions."
    )
    desired_cpu: Quantity | None = Field(
        default=None, alias="desiredCPU", description="CPUs requested by all desired pods."
    )
    desired_memory: Quantity | None = Field(
        default=None, description="Memory requested by all desired pods."
    )
    desired_gpu: Quantity | None = Field(
        default=None, alias="desiredGPU", description="GPUs requested by all desired pods."
    )
    desired_tpu: Quantity | None = Field(
        default=None, alias="desiredTPU", description="TPUs requested by all desired pods."
    )
    last_update_time: Time | None = Field(
        default=None,
        description="When the status was last written.",
        json_schema_extra={"nullable": True},
    )
    state_transition_times: dict[str, Time] | None = Field(
        default=None, description="When each state was last entered."
    )
    endpoints: StringMap | None = Field(
        default=None, description="Head Service port name to port (nodePort if any)."
    )
    head: HeadInfo | None = Field(default=None, description="Head pod and Service addresses.")
    reason: str | None = Field(default=None, description="Why the state is what it is.")
    conditions: list[Condition] | None = conditions_field()
    ready_worker_replicas: Int32 | None = Field(
        default=None, description="Worker pods that are Ready."
    )
    available_worker_replicas: Int32 | None = Field(
        default=None, description="Worker pods that are Running."
    )
    desired_worker_replicas: Int32 | None = Field(
        default=None, description="Sum of replicas x numOfHosts over the groups."
    )
    min_worker_replicas: Int32 | None = Field(
        default=None, description="Sum of minReplicas x numOfHosts over the groups."
    )
    max_worker_replicas: Int32 | None = Field(
        default=None, description="Sum of maxReplicas x numOfHosts over the groups."
    )
    observed_generation: Int64 | None = Field(
        default=None, description="Generation this status was computed from."
    )


class RayCluster(KubeModel):
    """A Ray cluster: one head pod and any number of worker groups."""

    api_version: Literal["ray.io/v1"] = Field(default=API_VERSION, description="ray.io/v1.")
    kind: Literal["RayCluster"] = Field(default="RayCluster", description="RayCluster.")
    metadata: ObjectMeta = Field(default_factory=ObjectMeta, description="Object metadata.")
    spec: RayClusterSpec = Field(description="Desired state.")
    status: RayClusterStatus | None = Field(default=None, description="Observed state.")
