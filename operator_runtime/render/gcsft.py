"""GCS fault tolerance wiring of the head and worker pods (Redis or embedded RocksDB)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Final

from operator_runtime.api import JSONObject, RayCluster
from operator_runtime.api.annotations import AnnotationKey
from operator_runtime.render._json import child_list, env_var, has_name, objects
from operator_runtime.render.names import gcs_storage_pvc_name

GCS_STORAGE_VOLUME: Final = "gcs-storage"
GCS_STORAGE_PATH: Final = "/data/gcs"
WORKER_GCS_RECONNECT_TIMEOUT_S: Final = "600"
"""Ray's default (60 s) is shorter than a head restart takes; workers would exit."""


def ft_enabled(cluster: RayCluster) -> bool:
    """GCS FT is on via the legacy annotation or ``gcsFaultToleranceOptions``."""
    annotation = (cluster.metadata.annotations or {}).get(AnnotationKey.FT_ENABLED, "")
    return annotation.lower() == "true" or cluster.spec.gcs_fault_tolerance_options is not None


def ft_embedded(cluster: RayCluster) -> bool:
    """The RocksDB backend (no Redis, no cleanup Job)."""
    options = cluster.spec.gcs_fault_tolerance_options
    return options is not None and options.backend == "rocksdb"


def redis_options_set(cluster: RayCluster) -> bool:
    """FT through ``gcsFaultToleranceOptions`` with the Redis backend."""
    return cluster.spec.gcs_fault_tolerance_options is not None and not ft_embedded(cluster)


def external_storage_namespace(cluster: RayCluster) -> str:
    """options.externalStorageNamespace > the legacy annotation > the cluster UID."""
    options = cluster.spec.gcs_fault_tolerance_options
    if options is not None and options.external_storage_namespace:
        return options.external_storage_namespace
    annotations = cluster.metadata.annotations or {}
    if AnnotationKey.EXTERNAL_STORAGE_NAMESPACE in annotations:
        return annotations[AnnotationKey.EXTERNAL_STORAGE_NAMESPACE]
    return cluster.metadata.uid or ""


DEFAULT_DELETION_TIMEOUT_SECONDS: Final = 300.0
"""Seconds after the deletion request when the Redis cleanup finalizer is forced off."""


def redis_cleanup_needed(cluster: RayCluster, *, cleanup_enabled: bool) -> bool:
    """Whether deleting ``cluster`` waits for a Redis cleanup Job (the finalizer is
    held): GCS FT on, with Redis, and ``ENABLE_GCS_FT_REDIS_CLEANUP`` not off."""
    return cleanup_enabled and ft_enabled(cluster) and not ft_embedded(cluster)


def deletion_timeout(annotations: Mapping[str, str]) -> float:
    """``ray.io/gcs-ft-deletion-timeout`` in seconds; the default for a missing, zero,
    negative or unreadable value."""
    raw = annotations.get(AnnotationKey.GCS_FT_DELETION_TIMEOUT, "")
    try:
        seconds = int(raw)
    except ValueError:
        return DEFAULT_DELETION_TIMEOUT_SECONDS
    return float(seconds) if seconds > 0 else DEFAULT_DELETION_TIMEOUT_SECONDS


def configure_worker(*, container: JSONObject, cluster: RayCluster) -> None:
    if not ft_enabled(cluster):
        return
    env = child_list(container, "env")
    if not has_name(objects(env), "RAY_gcs_rpc_server_reconnect_timeout_s"):
        env.append(
            env_var("RAY_gcs_rpc_server_reconnect_timeout_s", WORKER_GCS_RECONNECT_TIMEOUT_S)
        )


def configure_head(
    *,
    spec: JSONObject,
    container: JSONObject,
    annotations: dict[str, str],
    cluster: RayCluster,
    head_params: Mapping[str, str],
) -> None:
    """Head FT env, volumes and annotations; ``head_params`` are the user's head
    ``rayStartParams`` (the legacy path reads ``redis-password`` from them)."""
    enabled = ft_enabled(cluster)
    annotations[AnnotationKey.FT_ENABLED] = "true" if enabled else "false"
    if not enabled:
        return
    if ft_embedded(cluster):
        _configure_rocksdb(spec, container, cluster)
    else:
        _configure_redis(container, annotations, cluster, head_params)


def _configure_redis(
    container: JSONObject,
    annotations: dict[str, str],
    cluster: RayCluster,
    head_params: Mapping[str, str],
) -> None:
    env = child_list(container, "env")
    namespace = external_storage_namespace(cluster)
    annotations[AnnotationKey.EXTERNAL_STORAGE_NAMESPACE] = namespace
    if not has_name(objects(env), "RAY_external_storage_namespace"):
        env.append(env_var("RAY_external_storage_namespace", namespace))
    options = cluster.spec.gcs_fault_tolerance_options
    if options is None:
        # Legacy: a literal password in rayStartParams; the cleanup Job needs it as env.
        if not has_name(objects(env), "REDIS_PASSWORD") and "redis-password" in head_params:
            env.append(env_var("REDIS_PASSWORD", head_params["redis-password"]))
        return
    env.append(env_var("RAY_REDIS_ADDRESS", options.redis_address or ""))
    for name, credential in (
        ("REDIS_USERNAME", options.redis_username),
        ("REDIS_PASSWORD", options.redis_password),
    ):
        if credential is None:
            continue
        var = env_var(name, credential.value or "")
        if credential.value_from is not None:
            var["valueFrom"] = copy.deepcopy(credential.value_from)
        env.append(var)


def _configure_rocksdb(spec: JSONObject, container: JSONObject, cluster: RayCluster) -> None:
    env = child_list(container, "env")
    if not has_name(objects(env), "RAY_gcs_storage"):
        env.append(env_var("RAY_gcs_storage", "rocksdb"))
    if not has_name(objects(env), "RAY_gcs_storage_path"):
        env.append(env_var("RAY_gcs_storage_path", GCS_STORAGE_PATH))
    options = cluster.spec.gcs_fault_tolerance_options
    sub_path = options.storage.sub_path if options and options.storage else None
    mount: JSONObject = {"name": GCS_STORAGE_VOLUME, "mountPath": GCS_STORAGE_PATH}
    if sub_path:
        mount["subPath"] = sub_path
    child_list(container, "volumeMounts").append(mount)
    child_list(spec, "volumes").append(
        {
            "name": GCS_STORAGE_VOLUME,
            "persistentVolumeClaim": {"claimName": gcs_storage_pvc_name(cluster)},
        }
    )
