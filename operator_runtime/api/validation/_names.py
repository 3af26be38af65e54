"""Env vars, annotations, labels and paths that the validation rules look for.

They are KubeRay's names, kept private to validation: they describe what users may not set.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

FT_ENABLED_ANNOTATION: Final = "ray.io/ft-enabled"
EXTERNAL_STORAGE_NS_ANNOTATION: Final = "ray.io/external-storage-namespace"
INITIALIZING_TIMEOUT_ANNOTATION: Final = "ray.io/initializing-timeout"
ORIGINATED_FROM_CRD_LABEL: Final = "ray.io/originated-from-crd"
CLUSTER_SELECTOR_KEY: Final = "ray.io/cluster"

RAY_REDIS_ADDRESS: Final = "RAY_REDIS_ADDRESS"
REDIS_PASSWORD: Final = "REDIS_PASSWORD"
REDIS_USERNAME: Final = "REDIS_USERNAME"
RAY_GCS_STORAGE: Final = "RAY_gcs_storage"
RAY_GCS_STORAGE_PATH: Final = "RAY_gcs_storage_path"
RAY_ENABLE_AUTOSCALER_V2: Final = "RAY_enable_autoscaler_v2"
KUBERAY_GEN_AUTOSCALER_START_CMD: Final = "KUBERAY_GEN_AUTOSCALER_START_CMD"
GCS_STORAGE_VOLUME: Final = "gcs-storage"
GCS_MOUNT: Final = "/data/gcs"

TLS_ENV_VARS: Final = (
    "RAY_USE_TLS",
    "RAY_TLS_SERVER_CERT",
    "RAY_TLS_SERVER_KEY",
    "RAY_TLS_CA_CERT",
)
TLS_VOLUME: Final = "ray-tls"
TLS_MOUNT: Final = "/etc/ray/tls"

COLLECTOR_CONTAINER: Final = "ray-history-collector"
# Env vars the operator injects into the collector sidecar itself.
COLLECTOR_MANAGED_ENV: Final = (
    "POD_IP",
    "FQ_RAY_IP",
    "RAY_CLUSTER_NAME",
    "RAY_CLUSTER_NAMESPACE",
    "RAY_ROLE",
    "OWNER_KIND",
    "OWNER_NAME",
    "EVENTS_PORT",
)
STORAGE_BACKEND: Final = "STORAGE_BACKEND"
# Storage backend -> env vars that must all have a value.
COLLECTOR_BACKEND_ENV: Final[Mapping[str, tuple[str, ...]]] = MappingProxyType(
    {
        "GCS": ("GCS_BUCKET",),
        "S3": ("S3_REGION",),
        "ALIYUNOSS": ("OSS_BUCKET", "OSS_ENDPOINT", "OSS_REGION"),
    }
)
AZURE_AUTH_MODE: Final = "AZURE_STORAGE_AUTH_MODE"
AZURE_CONNECTION_STRING: Final = "AZURE_STORAGE_CONNECTION_STRING"
AZURE_ACCOUNT_URL: Final = "AZURE_STORAGE_ACCOUNT_URL"

MAX_RAYCLUSTER_NAME: Final = 53  # 63 minus len("-serve-svc")
MAX_RAYJOB_NAME: Final = MAX_RAYCLUSTER_NAME - 6  # room for the "-xxxxx" cluster suffix
MAX_RAYSERVICE_NAME: Final = MAX_RAYCLUSTER_NAME - 6
MAX_RAYCRONJOB_NAME: Final = MAX_RAYJOB_NAME - 11  # room for "-<unix minutes>"
