"""Event reasons, event actions and ``ReplicaFailure`` condition reasons of the
RayCluster, RayJob and NetworkPolicy controllers.

The strings are KubeRay's, so ``kubectl get events --field-selector reason=...`` and
alerts written for KubeRay keep working.
"""

from __future__ import annotations

from enum import StrEnum


class Reason(StrEnum):
    """``reason`` of the Events the RayCluster controller records."""

    INVALID_METADATA = "InvalidRayClusterMetadata"
    INVALID_SPEC = "InvalidRayClusterSpec"
    INVALID_STATUS = "InvalidRayClusterStatus"
    CREATED_HEAD_POD = "CreatedHeadPod"
    DELETED_HEAD_POD = "DeletedHeadPod"
    FAILED_TO_CREATE_HEAD_POD = "FailedToCreateHeadPod"
    FAILED_TO_DELETE_HEAD_POD = "FailedToDeleteHeadPod"
    CREATED_WORKER_POD = "CreatedWorkerPod"
    DELETED_WORKER_POD = "DeletedWorkerPod"
    FAILED_TO_CREATE_WORKER_POD = "FailedToCreateWorkerPod"
    FAILED_TO_DELETE_WORKER_POD = "FailedToDeleteWorkerPod"
    FAILED_TO_DELETE_WORKER_POD_COLLECTION = "FailedToDeleteWorkerPodCollection"
    DELETED_POD = "DeletedPod"
    FAILED_TO_DELETE_POD_COLLECTION = "FailedToDeletePodCollection"
    CREATED_REDIS_CLEANUP_JOB = "CreatedRedisCleanupJob"
    FAILED_TO_CREATE_REDIS_CLEANUP_JOB = "FailedToCreateRedisCleanupJob"
    REDIS_CLEANUP_JOB_FAILED = "RedisCleanupJobFailed"
    """Ours: KubeRay only logs a failed cleanup Job; a Warning tells the user that the
    storage namespace in Redis was left behind."""
    FORCE_DELETED_STUCK_CLUSTER = "ForceDeletedStuckCluster"
    CREATED_SERVICE = "CreatedService"
    FAILED_TO_CREATE_SERVICE = "FailedToCreateService"
    CREATED_SERVICE_ACCOUNT = "CreatedServiceAccount"
    FAILED_TO_CREATE_SERVICE_ACCOUNT = "FailedToCreateServiceAccount"
    CREATED_ROLE = "CreatedRole"
    FAILED_TO_CREATE_ROLE = "FailedToCreateRole"
    CREATED_ROLE_BINDING = "CreatedRoleBinding"
    FAILED_TO_CREATE_ROLE_BINDING = "FailedToCreateRoleBinding"
    CREATED_PVC = "CreatedPVC"
    FAILED_TO_CREATE_PVC = "FailedToCreatePVC"
    CREATED_INGRESS = "CreatedIngress"
    UPDATED_INGRESS = "UpdatedIngress"
    FAILED_TO_CREATE_INGRESS = "FailedToCreateIngress"
    FAILED_TO_UPDATE_INGRESS = "FailedToUpdateIngress"
    AUTOSCALER_SERVICE_ACCOUNT_NOT_FOUND = "AutoscalerServiceAccountNotFound"


class JobReason(StrEnum):
    """``reason`` of the Events the RayJob controller records."""

    INVALID_METADATA = "InvalidRayJobMetadata"
    INVALID_SPEC = "InvalidRayJobSpec"
    INVALID_STATUS = "InvalidRayJobStatus"
    CREATED_SUBMITTER = "CreatedRayJobSubmitter"
    DELETED_SUBMITTER = "DeletedRayJobSubmitter"
    FAILED_TO_CREATE_SUBMITTER = "FailedToCreateRayJobSubmitter"
    FAILED_TO_DELETE_SUBMITTER = "FailedToDeleteRayJobSubmitter"
    CREATED_CLUSTER = "CreatedRayCluster"
    UPDATED_CLUSTER = "UpdatedRayCluster"
    DELETED_CLUSTER = "DeletedRayCluster"
    FAILED_TO_CREATE_CLUSTER = "FailedToCreateRayCluster"
    FAILED_TO_UPDATE_CLUSTER = "FailedToUpdateRayCluster"
    FAILED_TO_DELETE_CLUSTER = "FailedToDeleteRayCluster"
    CLUSTER_NOT_FOUND = "RayClusterNotFound"
    CREATED_SERVICE = "CreatedService"
    UPDATED_SERVICE = "UpdatedService"
    FAILED_TO_CREATE_SERVICE = "FailedToCreateService"
    FAILED_TO_UPDATE_SERVICE = "FailedToUpdateService"
    FAILED_TO_STOP_JOB = "FailedToStopRayJob"
    """Ours: KubeRay only logs a failed stop on deletion (and retries forever when it
    cannot build the dashboard client); the deletion goes on either way."""
    BATCH_SCHEDULER_CLEANED_UP = "BatchSchedulerCleanedUp"
    FAILED_TO_CLEANUP_BATCH_SCHEDULER = "FailedToCleanupBatchScheduler"
    DELETED_RAYJOB = "DeletedRayJob"
    """Ours: KubeRay deletes the RayJob (DeleteSelf, DELETE_RAYJOB_CR_AFTER_JOB_FINISHES)
    without an Event; one tells ``kubectl get events`` readers why it went."""


class NetworkPolicyReason(StrEnum):
    """``reason`` of the Events the NetworkPolicy controller records (gate
    ``RayClusterNetworkPolicy``), on the RayCluster the policies belong to."""

    CREATED = "CreatedNetworkPolicy"
    UPDATED = "UpdatedNetworkPolicy"
    DELETED = "DeletedNetworkPolicy"
    FAILED_TO_CREATE = "FailedToCreateNetworkPolicy"
    FAILED_TO_UPDATE = "FailedToUpdateNetworkPolicy"
    FAILED_TO_DELETE = "FailedToDeleteNetworkPolicy"
    NAME_COLLISION = "NetworkPolicyNameCollision"


class MTLSReason(StrEnum):
    """``reason`` of the Events the mTLS controller records (gate ``RayClusterMTLS``),
    on the RayCluster whose certificates they are about."""

    PKI_READY = "MTLSPKIReady"
    CERTS_NOT_READY = "MTLSCertsNotReady"
    FAILED_TO_RECONCILE = "MTLSFailedToReconcile"
    CERTIFICATES_UPDATED = "MTLSCertificatesUpdated"
    CERTIFICATE_EXPIRING_SOON = "MTLSCertificateExpiringSoon"


class Action(StrEnum):
    """``action`` of an events.k8s.io Event: what the controller was doing."""

    CREATE = "Create"
    DELETE = "Delete"
    UPDATE = "Update"
    VALIDATE = "Validate"
    RECONCILE = "Reconcile"
    CLEANUP = "Cleanup"
    SUSPEND = "Suspend"


class ReplicaFailure(StrEnum):
    """Reasons of the ``ReplicaFailure`` condition: which pod operation failed."""

    DELETE_ALL_PODS = "FailedDeleteAllPods"
    DELETE_HEAD_POD = "FailedDeleteHeadPod"
    CREATE_HEAD_POD = "FailedCreateHeadPod"
    DELETE_WORKER_POD = "FailedDeleteWorkerPod"
    CREATE_WORKER_POD = "FailedCreateWorkerPod"
