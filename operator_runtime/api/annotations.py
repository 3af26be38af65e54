"""Annotation keys KubeRay reads from users or writes on the objects it creates."""

from __future__ import annotations

from enum import StrEnum


class AnnotationKey(StrEnum):
    """Every annotation key the operator reads or writes."""

    FT_ENABLED = "ray.io/ft-enabled"
    EXTERNAL_STORAGE_NAMESPACE = "ray.io/external-storage-namespace"
    GCS_FT_DELETION_TIMEOUT = "ray.io/gcs-ft-deletion-timeout"
    OVERWRITE_CONTAINER_CMD = "ray.io/overwrite-container-cmd"
    ENABLE_SERVE_SERVICE = "ray.io/enable-serve-service"
    UPGRADE_STRATEGY_RECREATE_HASH = "ray.io/upgrade-strategy-recreate-hash"
    KUBERAY_VERSION = "ray.io/kuberay-version"
    HASH_WITHOUT_REPLICAS_AND_WORKERS_TO_DELETE = (
        "ray.io/hash-without-replicas-and-workers-to-delete"
    )
    NUM_WORKER_GROUPS = "ray.io/num-worker-groups"
    DISABLE_PROVISIONED_HEAD_RESTART = "ray.io/disable-provisioned-head-restart"
    INITIALIZING_TIMEOUT = "ray.io/initializing-timeout"
    CRONJOB_SCHEDULED_TIMESTAMP = "ray.io/cronjob-scheduled-timestamp"
    INGRESS_CLASS = "kubernetes.io/ingress.class"
    GCS_STORAGE_CREATOR_UID = "ray.io/gcs-storage-creator-uid"
    """Ours, not KubeRay's: the UID of the RayCluster that created a RocksDB PVC. Only
    that cluster may (re)attach an owner reference to it, so a same-named claim made
    by someone else is never adopted and garbage-collected with the cluster."""
    SERVE_CONFIG_HASH = "pulumi-ray.io/serve-config-hash"
    """Ours, not KubeRay's: on a RayService's RayCluster, the SHA-256 of the
    ``serveConfigV2`` last PUT to its head. KubeRay keeps this only in memory, so after a
    restart mid-upgrade it PUTs the new config onto the old cluster that still carries
    the traffic; the annotation survives restarts and leader changes."""
    SERVE_CONFIG = "pulumi-ray.io/serve-config"
    """Ours: beside ``SERVE_CONFIG_HASH``, the config text itself (when small enough for
    an annotation), which a ``target_capacity`` step re-sends to a cluster that must
    keep running the config it was given."""
