"""The second stage of pod building (KubeRay's ``BuildPod``): volumes, the generated
command, env vars, probes, owner and metadata. Split from ``pods.py`` for size only."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from operator_runtime.api import JSONObject, JSONValue, RayCluster
from operator_runtime.api.annotations import AnnotationKey
from operator_runtime.api.labels import LabelKey, NodeType
from operator_runtime.render import containers
from operator_runtime.render._json import (
    child_list,
    env_var,
    field_ref_env,
    has_name,
    in_field_order,
    obj,
    objects,
    sorted_map,
    text,
)
from operator_runtime.render.metadata import CreatorKind, creator_kind, owner_reference
from operator_runtime.render.options import RenderOptions
from operator_runtime.render.raystart import RayStart

SHARED_MEMORY_VOLUME: Final = "shared-mem"
SHARED_MEMORY_PATH: Final = "/dev/shm"
RAY_LOGS_VOLUME: Final = "ray-logs"
RAY_LOGS_PATH: Final = "/tmp/ray"
ULIMIT: Final = "ulimit -n ${RAY_START_ULIMIT_OPEN_FILES:-65536}"
LOCALHOST: Final = "127.0.0.1"
# Go's ObjectMeta field order, so rendered metadata reads like KubeRay's.
META_FIELDS: Final[tuple[str, ...]] = (
    "name", "generateName", "namespace", "uid", "labels", "annotations",
    "ownerReferences", "finalizers",
)  # fmt: skip


@dataclass(slots=True)
class PodDraft:
    """The pod while ``build_pod`` assembles it: private to one build, mutated in place
    by both stages, never shared with the caller's model and never returned."""

    cluster: RayCluster
    node_type: NodeType
    options: RenderOptions
    meta: JSONObject
    spec: JSONObject
    labels: dict[str, str]
    annotations: dict[str, str]
    fqdn: str
    port: str


def finish_pod(*, draft: PodDraft, ray_start: RayStart) -> JSONObject:
    """The second stage: turn the completed template into the pod."""
    head = draft.node_type is NodeType.HEAD
    creator = creator_kind(draft.cluster)
    labels = dict(draft.labels)
    if creator == "RayService":
        # The RayService controller flips the head to "true" once its proxy is healthy.
        labels[LabelKey.SERVE] = "false" if head else "true"
    pod_containers = objects(draft.spec.get("containers"))
    ray = pod_containers[0]
    if "plasma-directory" not in ray_start.params:
        add_empty_dir(draft.spec, ray, SHARED_MEMORY_VOLUME, SHARED_MEMORY_PATH, memory=True)
    if head and draft.cluster.spec.enable_in_tree_autoscaling:
        # The head reads the autoscaler's event logs from the shared /tmp/ray.
        sidecar = next(
            c for c in pod_containers if c.get("name") == containers.AUTOSCALER_CONTAINER
        )
        add_empty_dir(draft.spec, ray, RAY_LOGS_VOLUME, RAY_LOGS_PATH, memory=False)
        add_empty_dir(draft.spec, sidecar, RAY_LOGS_VOLUME, RAY_LOGS_PATH, memory=False)
    _rewrite_command(ray, draft, ray_start, draft.annotations)
    for init in objects(draft.spec.get("initContainers")):
        env = child_list(init, "env")
        env.append(env_var("FQ_RAY_IP", draft.fqdn))
        env.append(env_var("RAY_IP", draft.fqdn.split(".")[0]))
    _set_ray_env(ray, draft, ray_start, creator)
    if draft.options.enable_probes_injection:
        containers.add_probes(
            container=ray,
            node_type=draft.node_type,
            creator=creator,
            params=ray_start.params,
            ray_version=draft.cluster.spec.ray_version,
        )
    meta = dict(draft.meta)
    meta["labels"] = sorted_map(labels)
    meta["annotations"] = sorted_map(draft.annotations)
    if not draft.annotations:
        del meta["annotations"]
    meta["ownerReferences"] = [owner_reference(draft.cluster)]
    ordered = in_field_order(meta, META_FIELDS)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": ordered, "spec": draft.spec}


def command_string(parts: JSONValue | None) -> str:
    """KubeRay's rendering of a user command or args: each element as `` x ``."""
    if not isinstance(parts, list):
        return ""
    return "".join(f" {part if isinstance(part, str) else ''} " for part in parts)


def _rewrite_command(
    ray: JSONObject, draft: PodDraft, ray_start: RayStart, annotations: dict[str, str]
) -> None:
    """Run ``ray start`` (after the user's own command, if any) under a raised file
    limit; skipped when the user opted out or already calls ``ray start`` themselves."""
    user = command_string(ray.get("command")) + command_string(ray.get("args"))
    overwrite = annotations.get(AnnotationKey.OVERWRITE_CONTAINER_CMD, "").lower() == "true"
    if overwrite or "ray start" in user:
        return
    generated = f"{ULIMIT}; {ray_start.command}"
    ray["command"] = list[JSONValue](draft.options.bash_command())
    # `ray start --block` never returns, so the user's command has to run first.
    ray["args"] = [f"{user} && {generated}" if user else generated]


def add_empty_dir(
    spec: JSONObject, container: JSONObject, name: str, path: str, *, memory: bool
) -> None:
    """Mount an emptyDir at ``path`` unless something is mounted there already; a
    memory-backed one is sized to the container's memory limit, else its request."""
    mounts = child_list(container, "volumeMounts")
    if any(mount.get("mountPath") == path for mount in objects(mounts)):
        return
    volumes = child_list(spec, "volumes")
    if not has_name(objects(volumes), name):
        empty_dir: JSONObject = {}
        if memory:
            empty_dir["medium"] = "Memory"
            size = _memory_limit_or_request(container)
            if size is not None:
                empty_dir["sizeLimit"] = size
        volumes.append({"name": name, "emptyDir": empty_dir})
    mounts.append({"name": name, "mountPath": path})


def _memory_limit_or_request(container: JSONObject) -> JSONValue | None:
    resources = obj(container.get("resources"))
    for source in ("limits", "requests"):
        values = obj(resources.get(source))
        if "memory" in values:
            return values["memory"]
    return None


def _set_ray_env(
    ray: JSONObject, draft: PodDraft, ray_start: RayStart, creator: CreatorKind
) -> None:
    env = child_list(ray, "env")

    def add_missing(name: str, value: str) -> None:
        if not has_name(objects(env), name):
            env.append(env_var(name, value))

    for default in draft.options.default_container_envs:
        if not has_name(objects(env), text(default.get("name"))):
            env.append(dict(default))
    worker = draft.node_type is NodeType.WORKER
    ip = draft.fqdn if worker else LOCALHOST
    if worker:
        env.append(env_var("FQ_RAY_IP", draft.fqdn))
        env.append(env_var("RAY_IP", draft.fqdn.split(".")[0]))
    env.append(field_ref_env("RAY_CLUSTER_NAME", containers.CLUSTER_NAME_FIELD))
    env.append(field_ref_env("RAY_CLUSTER_NAMESPACE", "metadata.namespace"))
    env.append(field_ref_env("RAY_CLOUD_INSTANCE_ID", "metadata.name"))
    env.append(field_ref_env("RAY_NODE_TYPE_NAME", containers.GROUP_FIELD))
    env.append(env_var("KUBERAY_GEN_RAY_START_CMD", ray_start.command))
    add_missing("RAY_PORT", draft.port)
    if creator == "RayService":
        # Fail over faster when a serving node dies.
        add_missing("RAY_timeout_ms_task_wait_for_death_info", "0")
        add_missing("RAY_gcs_server_request_timeout_seconds", "5")
        add_missing("RAY_SERVE_KV_TIMEOUT_S", "5")
    add_missing("RAY_ADDRESS", f"{ip}:{draft.port}")
    add_missing("RAY_USAGE_STATS_KUBERAY_IN_USE", "1")
    if not worker:
        tags = f"kuberay_version={draft.options.kuberay_version};kuberay_crd={creator}"
        env.append(env_var("RAY_USAGE_STATS_EXTRA_TAGS", tags))
    add_missing("RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE", "1")
