"""The batch Jobs the operator creates, and the RayJob submitter container.

The Redis cleanup Job deletes a GCS-FT cluster's keys from Redis on deletion. It is the
head pod cut down to its Ray container (same image, env and Redis credentials), running
a short Python script instead of ``ray start``.

A RayJob in K8sJobMode submits through a Job named as the RayJob, whose pod waits for
the dashboard, submits once (``ray job status`` first, since the Job may retry) and
follows the logs. SidecarMode runs the same script in a container appended to the head
pod (``sidecar_submitter_container``), talking to the dashboard on localhost.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final

from operator_runtime.api import JSONObject, JSONValue, ObjectMeta, RayCluster, RayJob
from operator_runtime.api.labels import CREATED_BY_KUBERAY, LabelKey, NodeType
from operator_runtime.render import containers
from operator_runtime.render._gofmt import (
    go_format_f32,
    go_json,
    go_quote,
    go_trim_space,
    go_yaml_to_json,
)
from operator_runtime.render._json import (
    child,
    child_list,
    deep_copy,
    env_var,
    has_name,
    obj,
    objects,
    sorted_map,
    string_map,
)
from operator_runtime.render.batchscheduler import SUBMITTER_GROUP, add_child_metadata
from operator_runtime.render.containers import in_go_order, resources
from operator_runtime.render.metadata import owner_reference
from operator_runtime.render.names import namespace_of, redis_cleanup_job_name
from operator_runtime.render.options import RenderOptions
from operator_runtime.render.pods import PodParams, RenderError, build_pod

ACTIVE_DEADLINE_SECONDS: Final = 300
"""Best effort: after five minutes the finalizer flow gives up on the Job."""
_DOCS_HINT: Final = (
    'echo "To get more information about manually deleting the storage namespace in Redis '
    "and removing the RayCluster's finalizer, please check "
    "https://docs.ray.io/en/master/cluster/kubernetes/user-guides/kuberay-gcs-ft.html "
    'for more details." && '
)


@dataclass(frozen=True, slots=True)
class RedisCleanupJobParams:
    cluster: RayCluster
    options: RenderOptions = field(default_factory=RenderOptions)


def redis_cleanup_script(*, with_username: bool) -> str:
    """The container's bash argument: a hint for humans, then Python that deletes the
    storage namespace and exits 1 if Ray reports failure. ``username=`` is passed only
    when ``REDIS_USERNAME`` exists (older Ray versions do not accept it)."""
    username = "username=os.getenv('REDIS_USERNAME', parsed.username), " if with_username else ""
    python = (
        "from ray._private.gcs_utils import cleanup_redis_storage; "
        "from urllib.parse import urlparse; "
        "import os; "
        "import sys; "
        "redis_address = os.getenv('RAY_REDIS_ADDRESS', '').split(',')[0]; "
        "redis_address = redis_address if '://' in redis_address "
        "else 'redis://' + redis_address; "
        "parsed = urlparse(redis_address); "
        "sys.exit(1) if not cleanup_redis_storage(host=parsed.hostname, port=parsed.port, "
        f"{username}"
        "password=os.getenv('REDIS_PASSWORD', parsed.password or ''), "
        "use_ssl=parsed.scheme=='rediss', "
        "storage_namespace=os.getenv('RAY_external_storage_namespace')) else None"
    )
    return f'{_DOCS_HINT}python -c "{python}"'


def build_redis_cleanup_job(*, params: RedisCleanupJobParams) -> JSONObject:
    cluster = params.cluster
    pod = build_pod(params=PodParams(cluster=cluster, options=params.options))
    meta = obj(pod.get("metadata"))
    labels = obj(meta.get("labels"))
    labels[LabelKey.NODE_TYPE.value] = NodeType.REDIS_CLEANUP.value
    spec = obj(pod.get("spec"))
    ray = objects(spec.get("containers"))[0]
    spec["containers"] = [ray]
    init = [
        c for c in objects(spec.get("initContainers")) if c.get("name") != "wait-for-tls-ip-san"
    ]
    if "initContainers" in spec:
        spec["initContainers"] = list[JSONValue](init)
    ray["command"] = list[JSONValue](params.options.bash_command())
    with_username = has_name(objects(ray.get("env")), "REDIS_USERNAME")
    ray["args"] = [redis_cleanup_script(with_username=with_username)]
    # The Job starts no raylet or GCS, so Ray's health endpoints would never answer.
    ray.pop("livenessProbe", None)
    ray.pop("readinessProbe", None)
    env = child_list(ray, "env")
    # Keep retrying Redis for a minute: it may still be starting or failing over.
    env.append(env_var("RAY_redis_db_connect_retries", "120"))
    env.append(env_var("RAY_redis_db_connect_wait_milliseconds", "500"))
    # Fixed and small: the script is light, and a GPU must not be held for it.
    ray["resources"] = resources("200m", "256Mi")
    spec["restartPolicy"] = "Never"
    job_meta: JSONObject = {
        "name": redis_cleanup_job_name(cluster),
        "namespace": namespace_of(cluster),
        "labels": dict(labels),
    }
    if meta.get("annotations"):
        job_meta["annotations"] = dict(obj(meta["annotations"]))
    job_meta["ownerReferences"] = [owner_reference(cluster)]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": job_meta,
        "spec": {
            "activeDeadlineSeconds": ACTIVE_DEADLINE_SECONDS,
            "backoffLimit": 0,
            "template": {"metadata": meta, "spec": spec},
        },
    }


SUBMITTER_CONTAINER: Final = "ray-job-submitter"
SUBMITTER_BACKOFF_LIMIT: Final = 2
"""At most three submission attempts: enough for a flaky network, few enough that an
application error does not keep a pod busy."""
SIDECAR_RESTART_GATE: Final = "SidecarSubmitterRestart"
GCS_HEALTH_PATH: Final = "api/gcs_healthz"
_GCS_HEALTH_TIMEOUT_SECONDS: Final = 10
_HEALTH_COMMAND: Final = (
    "python -c \"import urllib.request; r=urllib.request.urlopen('{url}', timeout={timeout}); "
    "exit(0 if b'success' in r.read() else 1)\""
)
_METADATA_SINCE: Final = (2, 6, 0)
"""``ray job submit --metadata-json`` exists from Ray 2.6.0 on."""
_SEMVER: Final = re.compile(
    r"v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?"
)


@dataclass(frozen=True, slots=True)
class SubmitterParams:
    """What the submitter of one RayJob attempt needs."""

    job: RayJob
    job_id: str
    """``status.jobId``: the submission id (``spec.jobId`` or ``<j>-<rand5>``)."""
    dashboard_url: str
    """``status.dashboardURL``: ``host:port``, no scheme ("" before it is known)."""
    options: RenderOptions = field(default_factory=RenderOptions)
    cluster: RayCluster | None = None
    """The RayCluster the job runs on (its own, or the one ``clusterSelector`` picks).
    KubeRay takes the default submitter image from its head and the token-auth env from
    its ``authOptions``. None: the RayJob's own ``rayClusterSpec``, under the name in
    ``status.rayClusterName``."""


def _target_cluster(params: SubmitterParams) -> RayCluster | None:
    if params.cluster is not None:
        return params.cluster
    job = params.job
    if job.spec.ray_cluster_spec is None:
        return None
    name = job.status.ray_cluster_name if job.status is not None else None
    meta = ObjectMeta(name=name or "", namespace=namespace_of(job))
    return RayCluster(metadata=meta, spec=job.spec.ray_cluster_spec)


def _head_container(job: RayJob) -> JSONObject:
    spec = job.spec.ray_cluster_spec
    template = spec.head_group_spec.template if spec is not None else {}
    found = objects(obj(template.get("spec")).get("containers"))
    return found[0] if found else {}


def _metadata_json(job: RayJob) -> str:
    """``--metadata-json``; refused when ``rayVersion`` is set and below 2.6.0 (Masterminds
    semver: a pre-release such as ``2.6.0-rc1`` does not satisfy ``>= 2.6.0``)."""
    version = job.spec.ray_cluster_spec.ray_version if job.spec.ray_cluster_spec else None
    if version:
        match = _SEMVER.fullmatch(version)
        if match is None:
            raise RenderError(f"failed to parse Ray version: {version}")
        parts = tuple(int(part or 0) for part in match.groups()[:3])
        if match.group(4) or parts < _METADATA_SINCE:
            raise RenderError("the Ray version must be at least 2.6.0 to use the metadata field")
    return go_json(dict(job.spec.metadata or {}))


def submit_command(
    params: SubmitterParams, *, sidecar: bool = False, sidecar_restart: bool = False
) -> str:
    """KubeRay's BuildJobSubmitCommand, joined by spaces: wait for the GCS to be healthy,
    then (K8sJobMode, or SidecarMode with ``SidecarSubmitterRestart``) submit only if
    ``ray job status`` does not know the id and follow the logs; otherwise submit and wait.

    Raises ``RenderError`` for a runtimeEnvYAML that is not YAML, or metadata on a Ray
    older than 2.6.0.
    """
    job, job_id = params.job, params.job_id
    if sidecar:
        # The sidecar shares the head pod's network namespace.
        port = containers.find_container_port(
            _head_container(job), "dashboard", containers.DEFAULT_DASHBOARD_PORT
        )
        address = f"http://127.0.0.1:{port}"
        health_url = f"http://localhost:{port}/{GCS_HEALTH_PATH}"
    else:
        url = params.dashboard_url
        # The fact sheet says ADDR = http:// + dashboardURL; KubeRay adds the scheme only
        # when the URL does not start with http:// already.
        address = url if url.startswith("http://") else "http://" + url
        health_url = f"{address}/{GCS_HEALTH_PATH}"
    health = _HEALTH_COMMAND.format(url=health_url, timeout=_GCS_HEALTH_TIMEOUT_SECONDS)
    waiting = go_quote(f"Waiting for Ray Dashboard GCS to become healthy at {address} ...")
    cmd = ["until", health, ">/dev/null", "2>&1", ";"]
    cmd += ["do", "echo", waiting, ";", "sleep", "2", ";", "done", ";"]
    # The submitter may run twice (Job retries, a restarted sidecar): submit only once.
    check_first = not sidecar or sidecar_restart
    if check_first:
        cmd += ["if", "!", "ray", "job", "status", "--address", address, job_id]
        cmd += [">/dev/null", "2>&1", ";", "then"]
    cmd += ["ray", "job", "submit", "--address", address]
    if check_first:
        cmd.append("--no-wait")
    spec = job.spec
    if spec.runtime_env_yaml:
        try:
            runtime_env = go_yaml_to_json(spec.runtime_env_yaml)
        except ValueError as error:
            raise RenderError(f"spec.runtimeEnvYAML: {error}") from None
        cmd += ["--runtime-env-json", go_quote(runtime_env)]
    if spec.metadata:
        cmd += ["--metadata-json", go_quote(_metadata_json(job))]
    if job_id:
        cmd += ["--submission-id", job_id]
    if spec.entrypoint_num_cpus and spec.entrypoint_num_cpus > 0:
        cmd += ["--entrypoint-num-cpus", go_format_f32(spec.entrypoint_num_cpus)]
    if spec.entrypoint_num_gpus and spec.entrypoint_num_gpus > 0:
        cmd += ["--entrypoint-num-gpus", go_format_f32(spec.entrypoint_num_gpus)]
    if spec.entrypoint_resources:
        cmd += ["--entrypoint-resources", go_quote(spec.entrypoint_resources)]
    cmd += ["--", go_trim_space(spec.entrypoint or ""), ";"]
    if check_first:
        cmd += ["fi", ";", "ray", "job", "logs", "--address", address, "--follow", job_id]
    return " ".join(cmd)


def _default_submitter_container(cluster: RayCluster | None) -> JSONObject:
    """``ray-job-submitter`` on the head's image, so client and cluster Ray match."""
    if cluster is None:
        raise RenderError(
            "the default submitter container takes the head image of the RayCluster the "
            "job runs on: pass that cluster, or set spec.submitterPodTemplate"
        )
    spec = obj(cluster.spec.head_group_spec.template.get("spec"))
    found = objects(spec.get("containers"))
    image = found[0].get("image") if found else None
    container: JSONObject = {"name": SUBMITTER_CONTAINER}
    if isinstance(image, str) and image:
        container["image"] = image
    container["resources"] = containers.submitter_default_resources()
    return container


def _configure_submitter(
    container: JSONObject,
    params: SubmitterParams,
    cluster: RayCluster | None,
    *,
    sidecar: bool,
    sidecar_restart: bool = False,
) -> None:
    """KubeRay's configureSubmitterContainer: the script (unless a K8sJobMode container
    brings its own command), then the env, appended even where the names exist."""
    command = submit_command(params, sidecar=sidecar, sidecar_restart=sidecar_restart)
    if sidecar or not container.get("command"):
        # -e: stop at the first failing command instead of running on.
        container["command"] = list[JSONValue](params.options.bash_command("e"))
        container["args"] = [command]
    env = child_list(container, "env")
    env.append(env_var("PYTHONUNBUFFERED", "1"))
    # For user commands: ray job submit --address=http://$RAY_DASHBOARD_ADDRESS ...
    env.append(env_var("RAY_DASHBOARD_ADDRESS", params.dashboard_url))
    env.append(env_var("RAY_JOB_SUBMISSION_ID", params.job_id))
    auth = cluster.spec.auth_options if cluster is not None else None
    if cluster is not None and auth is not None and auth.mode == "token":
        containers.add_token_auth_env(container=container, cluster=cluster)


def sidecar_submitter_container(
    params: SubmitterParams, *, restart_gate: bool = False
) -> JSONObject:
    """The submitter SidecarMode appends to the head pod: always the generated script.
    With the SidecarSubmitterRestart gate it restarts on failure (container restart
    rules, Kubernetes 1.35+); the status check in its script then avoids a resubmit."""
    cluster = _target_cluster(params)
    container = _default_submitter_container(cluster)
    _configure_submitter(container, params, cluster, sidecar=True, sidecar_restart=restart_gate)
    if restart_gate:
        container["restartPolicy"] = "OnFailure"
    return in_go_order(container)


def submitter_labels(job: RayJob) -> dict[str, str]:
    """Labels of the submitter Job and its pods; the operator's Job cache keeps only
    Jobs with ``created-by``."""
    return {
        LabelKey.ORIGINATED_FROM_CR_NAME: job.metadata.name or "",
        LabelKey.ORIGINATED_FROM_CRD: "RayJob",
        LabelKey.CREATED_BY: CREATED_BY_KUBERAY,
    }


def build_submitter_job(*, params: SubmitterParams) -> JSONObject:
    """The K8sJobMode submitter: a Job named as the RayJob, owned by it, retried
    ``submitterConfig.backoffLimit`` times (default 2), with no deadline or TTL."""
    job = params.job
    cluster = _target_cluster(params)
    if job.spec.submitter_pod_template is not None:
        template = deep_copy(job.spec.submitter_pod_template)
    else:
        default = _default_submitter_container(cluster)
        template = {"spec": {"containers": [default], "restartPolicy": "Never"}}
    spec = child(template, "spec")
    found = objects(spec.get("containers"))
    if not found:
        raise RenderError("spec.submitterPodTemplate.spec.containers: needs a container")
    _configure_submitter(found[0], params, cluster, sidecar=False)
    spec["containers"] = [in_go_order(found[0]), *found[1:]]
    auth = cluster.spec.auth_options if cluster is not None else None
    if auth is not None and auth.enable_k8s_token_auth:
        volumes = child_list(spec, "volumes")
        if not has_name(objects(volumes), containers.RAY_TOKEN_VOLUME):
            volumes.append(containers.ray_token_volume())
    labels = submitter_labels(job)
    meta = child(template, "metadata")
    meta["labels"] = sorted_map({**string_map(meta.get("labels")), **labels})
    add_child_metadata(
        params.options.batch_scheduler, parent=job, child_object=template,
        kind="PodTemplateSpec", group_name=SUBMITTER_GROUP,
    )  # fmt: skip
    config = job.spec.submitter_config
    backoff = config.backoff_limit if config is not None else None
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": job.metadata.name or "",
            "namespace": namespace_of(job),
            "labels": sorted_map(labels),
            "ownerReferences": [owner_reference(job)],
        },
        "spec": {
            "backoffLimit": SUBMITTER_BACKOFF_LIMIT if backoff is None else backoff,
            "template": {"metadata": template.pop("metadata"), **template},
        },
    }
