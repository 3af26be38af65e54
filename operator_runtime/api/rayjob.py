"""RayJob (ray.io/v1): run one Ray job, on its own cluster or on an existing one."""

from __future__ import annotations

from typing import Annotated, Final, Literal, TypeGuard, get_args

from pydantic import ConfigDict, Field, WithJsonSchema

from operator_runtime.api._base import KubeModel
from operator_runtime.api.common import (
    API_VERSION,
    Float32,
    Int32,
    Int64,
    ObjectMeta,
    PodTemplateSpec,
    StringMap,
    Time,
    cel_rules,
    managed_by_field,
    object_name_cel,
)
from operator_runtime.api.raycluster import RayClusterSpec, RayClusterStatus

JobStatus = Literal["", "PENDING", "RUNNING", "STOPPED", "SUCCEEDED", "FAILED"]
"""Status of the Ray job as the dashboard reports it; "" before submission."""

JobDeploymentStatus = Literal[
    "",
    "Initializing",
    "Running",
    "Complete",
    "Failed",
    "ValidationFailed",
    "Suspending",
    "Suspended",
    "Retrying",
    "Waiting",
]
"""Lifecycle state of the RayJob object itself; "" (New) is the unset field."""

JobFailedReason = Literal[
    "SubmissionFailed",
    "DeadlineExceeded",
    "PreRunningDeadlineExceeded",
    "AppFailed",
    "JobDeploymentStatusTransitionGracePeriodExceeded",
    "JobStatusCheckTimeoutExceeded",
    "ValidationFailed",
]
"""``status.reason`` of a Failed (or ValidationFailed) RayJob."""

JobSubmissionMode = Literal["K8sJobMode", "HTTPMode", "InteractiveMode", "SidecarMode"]
DeletionPolicyType = Literal["DeleteCluster", "DeleteWorkers", "DeleteSelf", "DeleteNone"]

# A one-value Literal becomes ``const`` in JSON schema, which CRD schemas do not support.
_FailedOnly = Annotated[Literal["Failed"], WithJsonSchema({"type": "string", "enum": ["Failed"]})]

TERMINAL_JOB_STATUSES: frozenset[JobStatus] = frozenset({"STOPPED", "SUCCEEDED", "FAILED"})
TERMINAL_JOB_DEPLOYMENT_STATUSES: frozenset[JobDeploymentStatus] = frozenset({"Complete", "Failed"})
_JOB_DEPLOYMENT_STATUSES: Final[frozenset[str]] = frozenset(get_args(JobDeploymentStatus))


def is_job_deployment_status(value: object) -> TypeGuard[JobDeploymentStatus]:
    """``value`` is a JobDeploymentStatus (the status field itself is a free string)."""
    return value in _JOB_DEPLOYMENT_STATUSES


_DELETION_STRATEGY_RULES = cel_rules(
    (
        "!((has(self.onSuccess) || has(self.onFailure)) && has(self.deletionRules))",
        "legacy policies (onSuccess/onFailure) and deletionRules cannot be used "
        "together within the same deletionStrategy",
    ),
    (
        "((has(self.onSuccess) && has(self.onFailure)) || has(self.deletionRules))",
        "deletionStrategy requires either BOTH onSuccess and onFailure, OR the "
        "deletionRules field (cannot be empty)",
    ),
)

_DELETION_CONDITION_RULES = cel_rules(
    (
        "!(has(self.jobStatus) && has(self.jobDeploymentStatus))",
        "JobStatus and JobDeploymentStatus cannot be used together within the "
        "same deletion condition.",
    ),
    (
        "has(self.jobStatus) || has(self.jobDeploymentStatus)",
        "the deletion condition requires either the JobStatus or the JobDeploymentStatus field.",
    ),
)


class DeletionPolicy(KubeModel):
    """Legacy per-outcome deletion policy."""

    policy: DeletionPolicyType | None = Field(
        default=None, description="What to delete once the job ends this way."
    )


class DeletionCondition(KubeModel):
    """When a deletion rule fires: exactly one of jobStatus or jobDeploymentStatus."""

    model_config = ConfigDict(json_schema_extra=_DELETION_CONDITION_RULES)

    job_status: Literal["SUCCEEDED", "FAILED"] | None = Field(
        default=None, description="Fire when the Ray job ends with this status."
    )
    job_deployment_status: _FailedOnly | None = Field(
        default=None, description="Fire when the RayJob itself reaches this state."
    )
    ttl_seconds: Int32 = Field(
        default=0, ge=0, description="Seconds to wait after the job ended before deleting."
    )


class DeletionRule(KubeModel):
    """One deletion rule: a policy and the condition that triggers it."""

    policy: DeletionPolicyType = Field(description="What to delete.")
    condition: DeletionCondition = Field(description="When to delete it.")


class DeletionStrategy(KubeModel):
    """What to clean up when the job finishes: legacy onSuccess+onFailure, or rules."""

    model_config = ConfigDict(json_schema_extra=_DELETION_STRATEGY_RULES)

    on_success: DeletionPolicy | None = Field(
        default=None, description="Legacy: policy after SUCCEEDED (needs onFailure too)."
    )
    on_failure: DeletionPolicy | None = Field(
        default=None, description="Legacy: policy after FAILED (needs onSuccess too)."
    )
    deletion_rules: list[DeletionRule] | None = Field(
        default=None,
        min_length=1,
        description="Rules, each run once due; excludes onSuccess/onFailure.",
    )


class SubmitterConfig(KubeModel):
    """Settings of the submitter Kubernetes Job."""

    backoff_limit: Int32 | None = Field(
        default=None, description="Retries of the submitter Job (default 2)."
    )


class RayJobStatusInfo(KubeModel):
    """Start and end times of the Ray job as the dashboard reports them."""

    start_time: Time | None = Field(default=None, description="When the Ray job started.")
    end_time: Time | None = Field(default=None, description="When the Ray job ended.")


_SELECTED_CLUSTER_RULE: Final = object_name_cel(
    "self['ray.io/cluster']",
    "'ray.io/cluster' in self",
    "['ray.io/cluster']",
    "clusterSelector[ray.io/cluster]",
)
"""The operator reads the RayCluster by this name, so it must be one."""


class RayJobSpec(KubeModel):
    """Desired state of a RayJob."""

    active_deadline_seconds: Int32 | None = Field(
        default=None, description="Fail the RayJob this many seconds after it started."
    )
    backoff_limit: Int32 | None = Field(
        default=0, description="Retries of the whole RayJob, each on a new cluster."
    )
    ray_cluster_spec: RayClusterSpec | None = Field(
        default=None, description="Cluster to create for this job (else clusterSelector)."
    )
    submitter_pod_template: PodTemplateSpec | None = Field(
        default=None, description="Pod template of the submitter Job (K8sJobMode)."
    )
    metadata: StringMap | None = Field(default=None, description="Metadata of the Ray job.")
    cluster_selector: StringMap | None = Field(
        default=None,
        description="Run on the existing cluster named by ray.io/cluster.",
        json_schema_extra={"x-kubernetes-validations": [_SELECTED_CLUSTER_RULE]},
    )
    submitter_config: SubmitterConfig | None = Field(
        default=None, description="Submitter Job settings."
    )
    managed_by: str | None = managed_by_field()
    deletion_strategy: DeletionStrategy | None = Field(
        default=None, description="What to delete when the job ends (feature gate)."
    )
    entrypoint: str | None = Field(default=None, description="Command that runs the job.")
    runtime_env_yaml: str | None = Field(
        default=None, alias="runtimeEnvYAML", description="Ray runtime environment, as YAML."
    )
    job_id: str | None = Field(
        default=None, description="Submission ID; generated if empty (given in InteractiveMode)."
    )
    submission_mode: JobSubmissionMode = Field(
        default="K8sJobMode",
        description="K8sJobMode, HTTPMode, InteractiveMode or SidecarMode.",
    )
    entrypoint_resources: str | None = Field(
        default=None, description="Custom resources for the entrypoint, a JSON object string."
    )
    entrypoint_num_cpus: Float32 | None = Field(
        default=None, description="CPUs reserved for the entrypoint."
    )
    entrypoint_num_gpus: Float32 | None = Field(
        default=None, description="GPUs reserved for the entrypoint."
    )
    ttl_seconds_after_finished: Int32 = Field(
        default=0, description="Seconds after the end before the cluster is deleted."
    )
    pre_running_deadline_seconds: Int32 | None = Field(
        default=None, ge=1, description="Fail if the job is not running after this many seconds."
    )
    shutdown_after_job_finishes: bool | None = Field(
        default=None, description="Delete the cluster once the job ends."
    )
    suspend: bool | None = Field(
        default=None, description="Suspend: delete the cluster and wait (needs shutdown)."
    )


class RayJobStatus(KubeModel):
    """Observed state of a RayJob."""

    ray_job_info: RayJobStatusInfo | None = Field(
        default=None, alias="rayJobInfo", description="Times reported by Ray."
    )
    job_id: str | None = Field(default=None, description="Submission ID in use.")
    ray_cluster_name: str | None = Field(default=None, description="Cluster running the job.")
    dashboard_url: str | None = Field(
        default=None, alias="dashboardURL", description="Dashboard host:port, no scheme."
    )
    job_status: str | None = Field(default=None, description="Status of the Ray job.")
    job_deployment_status: str | None = Field(
        default=None, description="Lifecycle state of the RayJob."
    )
    reason: str | None = Field(default=None, description="Why it failed.")
    message: str | None = Field(default=None, description="Detail for humans.")
    start_time: Time | None = Field(default=None, description="When the RayJob started.")
    end_time: Time | None = Field(default=None, description="When the RayJob reached an end.")
    succeeded: Int32 | None = Field(default=0, description="Successful attempts.")
    failed: Int32 | None = Field(default=0, description="Failed attempts.")
    ray_cluster_status: RayClusterStatus | None = Field(
        default=None, description="Copy of the cluster's status."
    )
    job_status_check_failure_start_time: Time | None = Field(
        default=None, description="When querying the job status started failing."
    )
    observed_generation: Int64 | None = Field(
        default=None, description="Generation this status was computed from."
    )


class RayJob(KubeModel):
    """A Ray job and, optionally, the cluster it runs on."""

    api_version: Literal["ray.io/v1"] = Field(default=API_VERSION, description="ray.io/v1.")
    kind: Literal["RayJob"] = Field(default="RayJob", description="RayJob.")
    metadata: ObjectMeta = Field(default_factory=ObjectMeta, description="Object metadata.")
    spec: RayJobSpec = Field(description="Desired state.")
    status: RayJobStatus | None = Field(default=None, description="Observed state.")
