# Names `python -m hack.deadcode` (vulture) must not report: each is used by something
# that vulture cannot see. Vulture matches by name only, so one line covers the name
# everywhere. Not imported by anything; excluded from ruff and mypy (it is vulture's
# whitelist syntax, `_.name` for an attribute).
# ruff: noqa
# type: ignore

# pydantic: the model configuration, and fields that are part of a wire schema (the CRDs,
# KubeRay's configuration file, Ray's dashboard and serve API) whether or not the
# operator reads them.
model_config
upscaling_mode  # AutoscalerOptions.upscalingMode
block_owner_deletion  # OwnerReference
generate_name  # ObjectMeta
self_link
deletion_timestamp
deletion_grace_period_seconds
owner_references
managed_fields
last_transition_time  # Condition
service_ip  # RayClusterStatus.head
desired_cpu  # RayClusterStatus
desired_memory
desired_gpu
desired_tpu
last_update_time
state_transition_times
ready_worker_replicas
available_worker_replicas
min_worker_replicas
max_worker_replicas
ray_job_info  # RayJobStatus
ray_cluster_status
job_status_check_failure_start_time
service_unhealthy_second_threshold  # RayServiceSpec
deployment_unhealthy_second_threshold
traffic_routed_percent  # RayServiceStatus
last_traffic_migrated_time
num_serve_endpoints
error_type  # clients/models.py: Ray's job and serve API
docs_path
deploy_mode
delete_ray_job_after_job_finishes  # KubeRay's Configuration file: accepted, not used
sidecar_submitter_restart  # FeatureGates: the --feature-gates name table sets it

# pydantic-settings: environment variables KubeRay reads that have no effect here (kept
# so they parse as KubeRay parses them), and the hook with its keyword arguments.
use_ingress_on_openshift
_.settings_customise_sources
settings_cls
env_settings
dotenv_settings
file_secret_settings

# The standard library's and other libraries' hooks.
_.ignore_aliases  # yaml.SafeDumper
_.auth_flow  # httpx.Auth
_._pool  # httpx.HTTPTransport reads the pool the dashboard client replaces
_.do_GET  # http.server.BaseHTTPRequestHandler
_.log_message
_.daemon_threads  # socketserver.ThreadingMixIn
__getattr__  # a module's lazy attributes (PEP 562): operator_runtime/runtime/__init__.py
_.connection_pool_maxsize  # kubernetes.client.Configuration
_.check_event  # yaml.composer.Composer reads its parser through these two
_.get_event

# Pulumi: the stack template's configuration fields, the mocks' and program's hooks.
ray_clusters
ray_jobs
ray_services
ray_cron_jobs
_.new_resource  # pulumi.runtime.Mocks
_.root_directory  # pulumi.runtime.settings

# Enum members of the components' args: the package schema lists each one (components/
# schema.json) and other languages' programs give them; Python code need not name them.
IMPLEMENTATION_SPECIFIC
JSON
CONSOLE
DEBUG
ALWAYS
IF_NOT_PRESENT
NEVER
