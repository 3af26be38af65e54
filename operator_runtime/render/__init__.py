"""Pure builders: ray.io/v1 models -> the Kubernetes objects KubeRay would create.

Every builder is keyword-only and takes one frozen ``*Params`` object; none does I/O,
logs, reads the clock or draws random numbers (random names and tokens are inputs),
and the same input always gives the same output, key order included. Operator-wide
settings (feature gates, env-var switches of KubeRay) arrive as ``RenderOptions``.
"""

from operator_runtime.render.cluster import ClusterRenderParams, render_cluster
from operator_runtime.render.documents import DocumentError, flatten_lists, load_documents
from operator_runtime.render.gateway import (
    build_gateway,
    build_httproute,
    cluster_serve_port,
    gateway_equal,
    gateway_ready,
    httproute_equal,
    httproute_ready,
    rayservice_gateway_name,
    rayservice_httproute_name,
)
from operator_runtime.render.ingress import IngressParams, build_head_ingress
from operator_runtime.render.jobs import (
    RedisCleanupJobParams,
    SubmitterParams,
    build_redis_cleanup_job,
    build_submitter_job,
    sidecar_submitter_container,
    submit_command,
)
from operator_runtime.render.manifest import (
    RAY_KINDS,
    ManifestError,
    ManifestRenderParams,
    RenderedManifest,
    add_render_arguments,
    is_ray_object,
    render_manifest,
    render_settings,
)
from operator_runtime.render.metadata import owner_reference, pod_labels
from operator_runtime.render.names import check_label, check_name, pod_name
from operator_runtime.render.networkpolicy import (
    NetworkPolicyParams,
    build_head_network_policy,
    build_network_policies,
    build_worker_network_policy,
    network_policy_matches,
)
from operator_runtime.render.options import RenderOptions
from operator_runtime.render.pods import PodParams, RenderError, build_pod
from operator_runtime.render.quantity import QuantityError, parse_quantity, quantity_value
from operator_runtime.render.raycronjob import (
    CronRenderParams,
    build_cron_rayjob,
    render_raycronjob,
)
from operator_runtime.render.rayjob_cluster import build_rayjob_cluster
from operator_runtime.render.rayservice import render_rayservice
from operator_runtime.render.rayservice_cluster import (
    build_rayservice_cluster,
    cluster_spec_hash,
    full_hash_matches,
    incremental_upgrade_enabled,
    partial_hash_matches,
)
from operator_runtime.render.raystart import RayStart, RayStartInput, build_ray_start
from operator_runtime.render.rbac import (
    OPERATOR_PERMISSIONS,
    USE_KUBERNETES_PROXY,
    AutoscalerRbacParams,
    ClusterRoleParams,
    Permission,
    build_autoscaler_role,
    build_autoscaler_role_binding,
    build_autoscaler_service_account,
    build_operator_cluster_role,
)
from operator_runtime.render.resources import desired_worker_replicas
from operator_runtime.render.serve import serve_config_body, serve_config_json
from operator_runtime.render.services import (
    ServiceParams,
    build_cluster_serve_service,
    build_head_service,
    build_headless_service,
    build_rayjob_head_service,
    build_rayservice_head_service,
    build_rayservice_serve_service,
    build_serve_service,
)
from operator_runtime.render.storage import (
    AuthSecretParams,
    GcsStoragePvcParams,
    build_auth_secret,
    build_gcs_storage_pvc,
)

__all__ = [
    "OPERATOR_PERMISSIONS",
    "RAY_KINDS",
    "USE_KUBERNETES_PROXY",
    "AuthSecretParams",
    "AutoscalerRbacParams",
    "ClusterRenderParams",
    "ClusterRoleParams",
    "CronRenderParams",
    "DocumentError",
    "GcsStoragePvcParams",
    "IngressParams",
    "ManifestError",
    "ManifestRenderParams",
    "NetworkPolicyParams",
    "Permission",
    "PodParams",
    "QuantityError",
    "RayStart",
    "RayStartInput",
    "RedisCleanupJobParams",
    "RenderError",
    "RenderOptions",
    "RenderedManifest",
    "ServiceParams",
    "SubmitterParams",
    "add_render_arguments",
    "build_auth_secret",
    "build_autoscaler_role",
    "build_autoscaler_role_binding",
    "build_autoscaler_service_account",
    "build_cluster_serve_service",
    "build_cron_rayjob",
    "build_gateway",
    "build_gcs_storage_pvc",
    "build_head_ingress",
    "build_head_network_policy",
    "build_head_service",
    "build_headless_service",
    "build_httproute",
    "build_network_policies",
    "build_operator_cluster_role",
    "build_pod",
    "build_ray_start",
    "build_rayjob_cluster",
    "build_rayjob_head_service",
    "build_rayservice_cluster",
    "build_rayservice_head_service",
    "build_rayservice_serve_service",
    "build_redis_cleanup_job",
    "build_serve_service",
    "build_submitter_job",
    "build_worker_network_policy",
    "check_label",
    "check_name",
    "cluster_serve_port",
    "cluster_spec_hash",
    "desired_worker_replicas",
    "flatten_lists",
    "full_hash_matches",
    "gateway_equal",
    "gateway_ready",
    "httproute_equal",
    "httproute_ready",
    "incremental_upgrade_enabled",
    "is_ray_object",
    "load_documents",
    "network_policy_matches",
    "owner_reference",
    "parse_quantity",
    "partial_hash_matches",
    "pod_labels",
    "pod_name",
    "quantity_value",
    "rayservice_gateway_name",
    "rayservice_httproute_name",
    "render_cluster",
    "render_manifest",
    "render_raycronjob",
    "render_rayservice",
    "render_settings",
    "serve_config_body",
    "serve_config_json",
    "sidecar_submitter_container",
    "submit_command",
]
