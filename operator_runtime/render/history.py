"""The history-server collector sidecar (gate ``RayClusterHistoryServer``), as KubeRay
v1.7.0 builds it.

A cluster with ``historyServerOptions.collectorOptions`` gets a ``ray-history-collector``
container in every head and worker pod. The collector reads the Ray logs from an
emptyDir both containers mount at ``/tmp/ray`` and receives Ray's events over HTTP on
``EVENTS_PORT``: the Ray container is told to export them to
``http://localhost:8084/v1/events``. Uploading to the storage backend is the collector's
business; the history server that reads the bucket is deployed apart, as in KubeRay.

Two steps, as in KubeRay: ``add_collector`` appends the container while the pod
template is completed (after token auth, before the operator's default sidecars), and
``wire_collector`` runs on the finished pod (KubeRay's ``BuildPod``), keyed on the
container's name, not on the options.
"""

from __future__ import annotations

import copy
from typing import Final

from operator_runtime.api import FeatureGates, JSONObject, JSONValue, RayCluster
from operator_runtime.api.clusteroptions import CollectorOptions
from operator_runtime.api.labels import LabelKey, NodeType
from operator_runtime.render import containers
from operator_runtime.render._json import (
    child,
    child_list,
    env_var,
    field_ref_env,
    has_name,
    objects,
)
from operator_runtime.render._podfinish import (
    RAY_LOGS_PATH,
    RAY_LOGS_VOLUME,
    PodDraft,
    add_empty_dir,
)
from operator_runtime.render.names import cluster_name, namespace_of

COLLECTOR_CONTAINER: Final = "ray-history-collector"
EVENTS_PORT: Final = "8084"
"""Where the collector listens for Ray's events (fixed in KubeRay, not configurable)."""
DASHBOARD_ADDRESS: Final = "http://localhost:8265"
EVENTS_EXPORT_ADDRESS: Final = f"http://localhost:{EVENTS_PORT}/v1/events"
EXPOSABLE_EVENT_TYPES: Final = ",".join(
    (
        "TASK_DEFINITION_EVENT",
        "TASK_LIFECYCLE_EVENT",
        "ACTOR_TASK_DEFINITION_EVENT",
        "TASK_PROFILE_EVENT",
        "DRIVER_JOB_DEFINITION_EVENT",
        "DRIVER_JOB_LIFECYCLE_EVENT",
        "ACTOR_DEFINITION_EVENT",
        "ACTOR_LIFECYCLE_EVENT",
        "NODE_DEFINITION_EVENT",
        "NODE_LIFECYCLE_EVENT",
    )
)
# What the Ray container needs to send its events to the collector; a name the user
# set keeps the user's value. Both exposable-type names are set: Ray renamed the
# setting, and each Ray version reads one of them.
RAY_EVENT_ENV: Final[tuple[tuple[str, str], ...]] = (
    ("RAY_enable_ray_event", "true"),
    ("RAY_enable_core_worker_ray_event_to_aggregator", "true"),
    ("RAY_DASHBOARD_AGGREGATOR_AGENT_EVENTS_EXPORT_ADDR", EVENTS_EXPORT_ADDRESS),
    ("RAY_DASHBOARD_AGGREGATOR_AGENT_EXPOSABLE_EVENT_TYPES", EXPOSABLE_EVENT_TYPES),
    (
        "RAY_DASHBOARD_AGGREGATOR_AGENT_PUBLISHER_HTTP_ENDPOINT_EXPOSABLE_EVENT_TYPES",
        EXPOSABLE_EVENT_TYPES,
    ),
)


def default_resources() -> JSONObject:
    """KubeRay's collector footprint when ``collectorOptions.resources`` is unset."""
    return {
        "limits": {"cpu": "200m", "memory": "256Mi"},
        "requests": {"cpu": "50m", "memory": "64Mi"},
    }


def collector_container(
    *,
    options: CollectorOptions,
    node_type: NodeType,
    cluster: RayCluster,
    fqdn: str,
) -> JSONObject:
    """The sidecar (KubeRay's ``BuildCollectorContainer``): the operator's env first,
    then the user's. ``OWNER_KIND``/``OWNER_NAME`` come from the cluster's
    ``ray.io/originated-from-*`` labels, so a RayJob's (and a RayCronJob's RayJob's) or
    a RayService's cluster names its owner and a plain RayCluster names none."""
    head = node_type is NodeType.HEAD
    env: list[JSONValue] = [
        field_ref_env("POD_IP", "status.podIP"),
        env_var("RAY_CLUSTER_NAME", cluster_name(cluster)),
        env_var("RAY_CLUSTER_NAMESPACE", namespace_of(cluster)),
        env_var("RAY_ROLE", "Head" if head else "Worker"),
        env_var("EVENTS_PORT", EVENTS_PORT),
    ]
    if fqdn:
        env.append(env_var("FQ_RAY_IP", fqdn))
    labels = cluster.metadata.labels or {}
    for name, key in (
        ("OWNER_KIND", LabelKey.ORIGINATED_FROM_CRD),
        ("OWNER_NAME", LabelKey.ORIGINATED_FROM_CR_NAME),
    ):
        if labels.get(key):
            env.append(env_var(name, labels[key]))
    user_env = copy.deepcopy(list(options.env or []))
    if head and not has_name(user_env, "RAY_DASHBOARD_ADDRESS"):
        env.append(env_var("RAY_DASHBOARD_ADDRESS", DASHBOARD_ADDRESS))
    env.extend(user_env)
    resources = options.resources
    container: JSONObject = {
        "name": COLLECTOR_CONTAINER,
        "image": options.image or "",
        "env": env,
        "resources": copy.deepcopy(resources) if resources is not None else default_resources(),
        "imagePullPolicy": options.image_pull_policy or "IfNotPresent",
    }
    return containers.in_go_order(container)


def add_collector(*, draft: PodDraft) -> None:
    """Append the collector to the pod template's containers, with the token-auth env the
    Ray container has (the collector calls the dashboard), when the gate is on and the
    cluster asks for it."""
    cluster = draft.cluster
    history = cluster.spec.history_server_options
    if not draft.options.feature_gates.ray_cluster_history_server or history is None:
        return
    if history.collector_options is None:
        return
    sidecar = collector_container(
        options=history.collector_options,
        node_type=draft.node_type,
        cluster=cluster,
        fqdn=draft.fqdn,
    )
    auth = cluster.spec.auth_options
    if auth is not None and auth.mode == "token":
        containers.add_token_auth_env(container=sidecar, cluster=cluster)
    child_list(draft.spec, "containers").append(sidecar)


def wire_collector(*, pod: JSONObject, gates: FeatureGates) -> None:
    """Share ``/tmp/ray`` between the Ray container and the (first) container named
    ``ray-history-collector``, and point the Ray container's event export at it. As in
    KubeRay this follows the name, so any such container gets it with the gate on."""
    if not gates.ray_cluster_history_server:
        return
    spec = child(pod, "spec")
    pod_containers = objects(spec.get("containers"))
    collector = next((c for c in pod_containers if c.get("name") == COLLECTOR_CONTAINER), None)
    if collector is None:
        return
    ray = pod_containers[0]
    add_empty_dir(spec, ray, RAY_LOGS_VOLUME, RAY_LOGS_PATH, memory=False)
    add_empty_dir(spec, collector, RAY_LOGS_VOLUME, RAY_LOGS_PATH, memory=False)
    env = child_list(ray, "env")
    for name, value in RAY_EVENT_ENV:
        if not has_name(objects(env), name):
            env.append(env_var(name, value))
