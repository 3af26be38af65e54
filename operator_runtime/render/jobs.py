"""The Redis cleanup Job that deletes a GCS-FT cluster's keys from Redis on deletion.

It is the head pod cut down to its Ray container (same image, env and Redis
credentials), running a short Python script instead of ``ray start``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from operator_runtime.api import JSONObject, JSONValue, RayCluster
from operator_runtime.api.labels import LabelKey, NodeType
from operator_runtime.render._json import child_list, env_var, has_name, obj, objects
from operator_runtime.render.containers import resources
from operator_runtime.render.metadata import owner_reference
from operator_runtime.render.names import namespace_of, redis_cleanup_job_name
from operator_runtime.render.options import RenderOptions
from operator_runtime.render.pods import PodParams, build_pod

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
