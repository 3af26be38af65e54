"""Head and worker pods, built from a group's template the way KubeRay builds them.

``build_pod`` follows KubeRay's two stages: first the template is completed (name,
labels, injected containers, FT/auth wiring, metrics port), then the pod is finished
(``/dev/shm``, the ``ray start`` command, env vars, probes). The order matters: env var
order is part of the output and the init container copies the user's env as it was.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from operator_runtime.api import JSONObject, RayCluster, WorkerGroupSpec
from operator_runtime.api.annotations import AnnotationKey
from operator_runtime.api.labels import HEAD_GROUP, LabelKey, NodeType
from operator_runtime.render import containers, gcsft, history, tls
from operator_runtime.render._json import (
    child,
    child_list,
    deep_copy,
    env_var,
    has_name,
    objects,
    string_map,
    text,
)
from operator_runtime.render._podfinish import PodDraft, finish_pod
from operator_runtime.render.batchscheduler import add_child_metadata
from operator_runtime.render.metadata import pod_labels
from operator_runtime.render.names import (
    autoscaler_service_account_name,
    check_name,
    cluster_name,
    head_fqdn,
    namespace_of,
    pod_name,
)
from operator_runtime.render.options import RenderOptions
from operator_runtime.render.raystart import RayStart, RayStartInput, build_ray_start, head_port


class RenderError(ValueError):
    """The custom resource cannot be rendered (a group or container is missing)."""


@dataclass(frozen=True, slots=True)
class PodParams:
    """One pod to build. Multi-host indexes and the replica name are inputs, so the
    random suffix KubeRay draws for a replica is chosen by the caller."""

    cluster: RayCluster
    node_type: NodeType = NodeType.HEAD
    group_name: str = ""
    """The worker group (ignored for the head)."""
    options: RenderOptions = field(default_factory=RenderOptions)
    replica_index: int = 0
    """``ray.io/worker-group-replica-index`` (multi-host indexing gate)."""
    replica_name: str = ""
    """``ray.io/worker-group-replica-name``, ``<group>-<rand5>`` (numOfHosts > 1)."""
    host_index: int = 0
    """``ray.io/replica-host-index`` (numOfHosts > 1)."""


def worker_group(cluster: RayCluster, name: str) -> WorkerGroupSpec:
    for group in cluster.spec.worker_group_specs or ():
        if group.group_name == name:
            return group
    raise RenderError(f"RayCluster {cluster_name(cluster)!r} has no worker group {name!r}")


def build_pod(*, params: PodParams) -> JSONObject:
    """The head or worker pod KubeRay would create (``generateName`` set, no name)."""
    cluster, options = params.cluster, params.options
    head = params.node_type is NodeType.HEAD
    group = None if head else worker_group(cluster, params.group_name)
    template = deep_copy(group.template if group else cluster.spec.head_group_spec.template)
    draft = PodDraft(
        cluster=cluster,
        node_type=params.node_type,
        options=options,
        meta=child(template, "metadata"),
        spec=child(template, "spec"),
        labels={},
        annotations={},
        fqdn=head_fqdn(cluster, options.cluster_domain),
        port=head_port(cluster.spec.head_group_spec.ray_start_params),
    )
    ray = _ray_container(draft.spec, cluster)
    _set_names(draft, params, head)
    if not head and options.enable_init_container_injection:
        command = options.bash_command()
        init = containers.wait_gcs_ready_container(
            ray_container=ray, address=f"{draft.fqdn}:{draft.port}", command=command
        )
        child_list(draft.spec, "initContainers").append(init)
    draft.labels = _labels(draft, params, group)
    ray_start = _ray_start(draft, ray, group)
    draft.annotations = string_map(draft.meta.get("annotations"))
    overwrite = AnnotationKey.OVERWRITE_CONTAINER_CMD
    if (cluster.metadata.annotations or {}).get(overwrite, "").lower() == "true":
        draft.annotations[overwrite] = "true"
    if head:
        _complete_head(draft, ray)
    else:
        gcsft.configure_worker(container=ray, cluster=cluster)
        if _autoscaler_v2(cluster):
            draft.spec["restartPolicy"] = "Never"
    _add_metrics_port(ray)
    if cluster.spec.auth_options is not None and cluster.spec.auth_options.mode == "token":
        _configure_token_auth(draft, ray)
    if tls.tls_enabled(cluster, options.feature_gates):
        tls.configure_pod(spec=draft.spec, cluster=cluster, node_type=params.node_type)
    history.add_collector(draft=draft)
    _add_operator_defaults(draft, head)
    pod = finish_pod(draft=draft, ray_start=ray_start)
    history.wire_collector(pod=pod, gates=options.feature_gates)
    # Last, as KubeRay stamps a pod right before creating it: the scheduler's keys win.
    add_child_metadata(
        options.batch_scheduler, parent=cluster, child_object=pod, kind="Pod",
        group_name=HEAD_GROUP if head else params.group_name,
    )  # fmt: skip
    return pod


def _ray_container(spec: JSONObject, cluster: RayCluster) -> JSONObject:
    pod_containers = objects(spec.get("containers"))
    if not pod_containers:
        raise RenderError(f"RayCluster {cluster_name(cluster)!r}: a pod template has no containers")
    return pod_containers[0]


def _autoscaler_v2(cluster: RayCluster) -> bool:
    options = cluster.spec.autoscaler_options
    return bool(cluster.spec.enable_in_tree_autoscaling) and (
        options is not None and options.version == "v2"
    )


def _set_names(draft: PodDraft, params: PodParams, head: bool) -> None:
    name = cluster_name(params.cluster)
    if head:
        deterministic = params.options.deterministic_head_pod_name
        prefix = pod_name(name, NodeType.HEAD, generate=not deterministic)
        draft.meta["name" if deterministic else "generateName"] = prefix
    else:
        prefix = pod_name(f"{name}-{params.group_name}", NodeType.WORKER, generate=True)
        draft.meta["generateName"] = prefix
        # Several replicas share the template; a fixed name would collide.
        draft.meta.pop("name", None)
    draft.meta["namespace"] = namespace_of(params.cluster)


def _labels(draft: PodDraft, params: PodParams, group: WorkerGroupSpec | None) -> dict[str, str]:
    head_spec = params.cluster.spec.head_group_spec
    group_labels = (group.labels if group else head_spec.labels) or {}
    merged = {**string_map(draft.meta.get("labels")), **group_labels}
    if group is None:
        return pod_labels(params.cluster, NodeType.HEAD, HEAD_GROUP, merged)
    labels = pod_labels(params.cluster, NodeType.WORKER, group.group_name, merged)
    if params.options.feature_gates.ray_multi_host_indexing:
        labels[LabelKey.WORKER_GROUP_REPLICA_INDEX] = str(params.replica_index)
        if group.num_of_hosts > 1:
            labels[LabelKey.WORKER_GROUP_REPLICA_NAME] = params.replica_name
            labels[LabelKey.REPLICA_HOST_INDEX] = str(params.host_index)
    return labels


def _ray_start(draft: PodDraft, ray: JSONObject, group: WorkerGroupSpec | None) -> RayStart:
    cluster = draft.cluster
    source = group if group is not None else cluster.spec.head_group_spec
    head = group is None
    options = cluster.spec.gcs_fault_tolerance_options
    redis_options = head and gcsft.redis_options_set(cluster) and options is not None
    spec = RayStartInput(
        node_type=NodeType.HEAD if head else NodeType.WORKER,
        params=source.ray_start_params or {},
        container_resources=copy.deepcopy(child(ray, "resources")) if ray.get("resources") else {},
        group_resources=source.resources or {},
        group_labels=source.labels or {},
        head_address=f"{draft.fqdn}:{draft.port}",
        autoscaling=head and bool(cluster.spec.enable_in_tree_autoscaling),
        redis_username_env=redis_options and options is not None and bool(options.redis_username),
        redis_password_env=redis_options and options is not None and bool(options.redis_password),
    )
    return build_ray_start(spec=spec)


def _complete_head(draft: PodDraft, ray: JSONObject) -> None:
    cluster = draft.cluster
    if cluster.spec.enable_in_tree_autoscaling:
        draft.spec["serviceAccountName"] = check_name(autoscaler_service_account_name(cluster))
        sidecar = containers.autoscaler_container(
            cluster=cluster,
            image=text(ray.get("image")),
            command=draft.options.bash_command(),
            tls=tls.tls_enabled(cluster, draft.options.feature_gates),
        )
        child_list(draft.spec, "containers").append(sidecar)
        version = (
            cluster.spec.autoscaler_options.version if cluster.spec.autoscaler_options else None
        )
        if version is not None:
            value = "true" if version == "v2" else "false"
            child_list(ray, "env").append(env_var("RAY_enable_autoscaler_v2", value))
        if version == "v2":
            draft.spec["restartPolicy"] = "Never"
    gcsft.configure_head(
        spec=draft.spec,
        container=ray,
        annotations=draft.annotations,
        cluster=cluster,
        head_params=cluster.spec.head_group_spec.ray_start_params or {},
    )


def _add_metrics_port(ray: JSONObject) -> None:
    ports = child_list(ray, "ports")
    if not has_name(objects(ports), "metrics"):
        ports.append({"name": "metrics", "containerPort": 8080})


def _configure_token_auth(draft: PodDraft, ray: JSONObject) -> None:
    cluster = draft.cluster
    containers.add_token_auth_env(container=ray, cluster=cluster)
    auth = cluster.spec.auth_options
    if auth is not None and auth.enable_k8s_token_auth:
        volumes = child_list(draft.spec, "volumes")
        if not has_name(objects(volumes), containers.RAY_TOKEN_VOLUME):
            volumes.append(containers.ray_token_volume())
    for init in objects(draft.spec.get("initContainers")):
        if init.get("name") == containers.WAIT_GCS_READY:
            containers.add_token_auth_env(container=init, cluster=cluster)


def _add_operator_defaults(draft: PodDraft, head: bool) -> None:
    options = draft.options
    sidecars = options.head_sidecar_containers if head else options.worker_sidecar_containers
    if sidecars:
        child_list(draft.spec, "containers").extend(copy.deepcopy(list(sidecars)))
    for key, value in options.default_pod_annotations.items():
        draft.annotations.setdefault(key, value)
    for key, value in options.default_pod_labels.items():
        draft.labels.setdefault(key, value)
