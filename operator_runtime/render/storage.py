"""Objects that hold cluster state: the auth-token Secret and the RocksDB GCS PVC."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Final

from operator_runtime.api import JSONObject, JSONValue, RayCluster
from operator_runtime.api.labels import LabelKey
from operator_runtime.render.gcsft import ft_embedded, ft_enabled
from operator_runtime.render.metadata import object_meta
from operator_runtime.render.names import (
    auth_secret_name,
    cluster_name,
    gcs_storage_pvc_name,
    namespace_of,
)

AUTH_TOKEN_KEY: Final = "auth_token"
DEFAULT_GCS_STORAGE_SIZE: Final = "1Gi"


@dataclass(frozen=True, slots=True)
class AuthSecretParams:
    cluster: RayCluster
    token: str
    """The random token (KubeRay: 32 random bytes, base64); drawn by the caller."""


@dataclass(frozen=True, slots=True)
class GcsStoragePvcParams:
    cluster: RayCluster


def auth_secret_needed(cluster: RayCluster) -> bool:
    """Token auth without a user Secret and without Kubernetes token auth."""
    auth = cluster.spec.auth_options
    return (
        auth is not None
        and auth.mode == "token"
        and not auth.enable_k8s_token_auth
        and not auth.secret_name
    )


def build_auth_secret(*, params: AuthSecretParams) -> JSONObject:
    cluster = params.cluster
    meta = object_meta(
        name=auth_secret_name(cluster),
        namespace=namespace_of(cluster),
        labels={LabelKey.CLUSTER: cluster_name(cluster)},
        owner=cluster,
    )
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": meta,
        "stringData": {AUTH_TOKEN_KEY: params.token},
    }


def gcs_storage_pvc_needed(cluster: RayCluster) -> bool:
    """RocksDB GCS FT with an operator-managed claim (not the user's ``claimName``)."""
    options = cluster.spec.gcs_fault_tolerance_options
    if not (ft_enabled(cluster) and ft_embedded(cluster)) or options is None:
        return False
    return options.storage is None or not options.storage.claim_name


def build_gcs_storage_pvc(*, params: GcsStoragePvcParams) -> JSONObject:
    """The RocksDB volume; owned by the cluster unless ``deletionPolicy: Retain``."""
    cluster = params.cluster
    options = cluster.spec.gcs_fault_tolerance_options
    storage = options.storage if options is not None else None
    retain = storage is not None and storage.deletion_policy == "Retain"
    modes = storage.access_modes if storage and storage.access_modes else ["ReadWriteOnce"]
    size = storage.size if storage and storage.size is not None else DEFAULT_GCS_STORAGE_SIZE
    spec: JSONObject = {"accessModes": list[JSONValue](copy.copy(modes))}
    spec["resources"] = {"requests": {"storage": size}}
    if storage is not None and storage.storage_class_name is not None:
        spec["storageClassName"] = storage.storage_class_name
    meta = object_meta(
        name=gcs_storage_pvc_name(cluster),
        namespace=namespace_of(cluster),
        labels={LabelKey.CLUSTER: cluster_name(cluster)},
        owner=None if retain else cluster,
    )
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}
