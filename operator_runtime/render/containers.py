"""Containers and container parts the operator injects: the autoscaler sidecar, the
worker's ``wait-gcs-ready`` init container, health probes and token-auth env vars."""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Final

from operator_runtime.api import JSONObject, JSONValue, RayCluster
from operator_runtime.api.labels import LabelKey, NodeType
from operator_runtime.render._json import (
    child_list,
    env_var,
    field_ref_env,
    has_name,
    in_field_order,
    objects,
)
from operator_runtime.render.metadata import CreatorKind
from operator_runtime.render.names import auth_secret_name
from operator_runtime.render.raystart import DEFAULT_DASHBOARD_AGENT_PORT, shell_word

AUTOSCALER_CONTAINER: Final = "autoscaler"
WAIT_GCS_READY: Final = "wait-gcs-ready"
AUTOSCALER_START_CMD: Final = (
    "ray kuberay-autoscaler --cluster-name $(RAY_CLUSTER_NAME) "
    "--cluster-namespace $(RAY_CLUSTER_NAMESPACE)"
)
CLUSTER_NAME_FIELD: Final = f"metadata.labels['{LabelKey.CLUSTER}']"
GROUP_FIELD: Final = f"metadata.labels['{LabelKey.GROUP}']"
TLS_VOLUME: Final = "ray-tls"
TLS_MOUNT_PATH: Final = "/etc/ray/tls"
RAY_TOKEN_VOLUME: Final = "ray-token"
RAY_TOKEN_MOUNT_PATH: Final = "/var/run/secrets/ray.io/serviceaccount"
DEFAULT_DASHBOARD_PORT: Final = 8265
DEFAULT_SERVE_PORT: Final = 8000
UNIFIED_HEALTH_CHECK_SINCE: Final = (2, 53, 0)
"""Ray versions from here on answer ``/api/healthz`` on the dashboard agent."""
_WGET: Final = "wget --tries 1 -T {timeout} -q -O- http://localhost:{port}/{path} | grep success"
_VERSION: Final = re.compile(r"\s*v?([0-9]+(?:\.[0-9]+)*)")


def submitter_default_resources() -> JSONObject:
    """The default submitter container's resources (KubeRay's fixed 500m/200Mi requests,
    1/1Gi limits): the submitter Job, the SidecarMode container, and what the gang
    schedulers count for the submitter all take them from here."""
    return {
        "limits": {"cpu": "1", "memory": "1Gi"},
        "requests": {"cpu": "500m", "memory": "200Mi"},
    }


def default_submitter_template() -> JSONObject:
    """KubeRay's default submitter pod template, less the image (which only the
    submitter Job needs): what a gang scheduler counts for a RayJob's submitter."""
    container: JSONObject = {
        "name": "ray-job-submitter",
        "resources": submitter_default_resources(),
    }
    return {"spec": {"containers": [container], "restartPolicy": "Never"}}


def resources(cpu: str, memory: str) -> JSONObject:
    """Equal limits and requests: the injected containers' fixed, tiny footprint."""
    return {
        "limits": {"cpu": cpu, "memory": memory},
        "requests": {"cpu": cpu, "memory": memory},
    }


# corev1.Container's field order, so injected containers read like KubeRay's.
_CONTAINER_FIELDS: Final[tuple[str, ...]] = (
    "name", "image", "command", "args", "workingDir", "ports", "envFrom", "env",
    "resources", "resizePolicy", "restartPolicy", "volumeMounts", "volumeDevices",
    "livenessProbe", "readinessProbe", "startupProbe", "lifecycle",
    "terminationMessagePath", "terminationMessagePolicy", "imagePullPolicy",
    "securityContext",
)  # fmt: skip


def in_go_order(container: JSONObject) -> JSONObject:
    """The container with its known fields in Go's order; others keep theirs, last."""
    return in_field_order(container, _CONTAINER_FIELDS)


def find_container_port(container: JSONObject, name: str, default: int) -> int:
    for port in objects(container.get("ports")):
        number = port.get("containerPort")
        if port.get("name") == name and isinstance(number, int):
            return number
    return default


def autoscaler_container(
    *, cluster: RayCluster, image: str, command: list[str], tls: bool = False
) -> JSONObject:
    """The in-tree autoscaler sidecar, with ``autoscalerOptions`` applied: scalar fields
    replace the defaults, lists (env, envFrom, volumeMounts) are appended to them.
    ``tls``: mTLS is on, and the TLS env and mount come before the user's lists."""
    env: list[JSONValue] = [
        field_ref_env("RAY_CLUSTER_NAME", CLUSTER_NAME_FIELD),
        field_ref_env("RAY_CLUSTER_NAMESPACE", "metadata.namespace"),
        field_ref_env("RAY_HEAD_POD_NAME", "metadata.name"),
        env_var("KUBERAY_CRD_VER", "v1"),
        env_var("KUBERAY_GEN_AUTOSCALER_START_CMD", AUTOSCALER_START_CMD),
    ]
    container: JSONObject = {
        "name": AUTOSCALER_CONTAINER,
        "image": image,
        "command": list[JSONValue](command),
        "args": [AUTOSCALER_START_CMD],
        "env": env,
        "resources": resources("500m", "512Mi"),
        "imagePullPolicy": "IfNotPresent",
    }
    if _auth_enabled(cluster):
        add_token_auth_env(container=container, cluster=cluster)
    if tls:
        add_tls_config(container)
    options = cluster.spec.autoscaler_options
    if options is None:
        return in_go_order(container)
    if options.resources is not None:
        container["resources"] = copy.deepcopy(options.resources)
    if options.image is not None:
        container["image"] = options.image
    if options.image_pull_policy is not None:
        container["imagePullPolicy"] = options.image_pull_policy
    for key, extra in (
        ("env", options.env),
        ("envFrom", options.env_from),
        ("volumeMounts", options.volume_mounts),
    ):
        if extra:
            child_list(container, key).extend(copy.deepcopy(extra))
    if options.security_context is not None:
        container["securityContext"] = copy.deepcopy(options.security_context)
    if options.command:
        container["command"] = list[JSONValue](options.command)
    if options.args:
        container["args"] = list[JSONValue](options.args)
    return in_go_order(container)


def _auth_enabled(cluster: RayCluster) -> bool:
    auth = cluster.spec.auth_options
    return auth is not None and auth.mode == "token"


def _k8s_auth_enabled(cluster: RayCluster) -> bool:
    auth = cluster.spec.auth_options
    return auth is not None and bool(auth.enable_k8s_token_auth)


def add_token_auth_env(*, container: JSONObject, cluster: RayCluster) -> None:
    """``RAY_AUTH_MODE=token`` plus either Kubernetes token auth (a projected SA token)
    or ``RAY_AUTH_TOKEN`` from the cluster's auth Secret; names the container set win."""
    env = child_list(container, "env")
    if not has_name(objects(env), "RAY_AUTH_MODE"):
        env.append(env_var("RAY_AUTH_MODE", "token"))
    if _k8s_auth_enabled(cluster):
        if not has_name(objects(env), "RAY_ENABLE_K8S_TOKEN_AUTH"):
            env.append(env_var("RAY_ENABLE_K8S_TOKEN_AUTH", "true"))
        mounts = child_list(container, "volumeMounts")
        if not has_name(objects(mounts), RAY_TOKEN_VOLUME):
            mounts.append(
                {"name": RAY_TOKEN_VOLUME, "readOnly": True, "mountPath": RAY_TOKEN_MOUNT_PATH}
            )
        return
    auth = cluster.spec.auth_options
    secret = (auth.secret_name if auth is not None else None) or auth_secret_name(cluster)
    if not has_name(objects(env), "RAY_AUTH_TOKEN"):
        env.append(
            {
                "name": "RAY_AUTH_TOKEN",
                "valueFrom": {"secretKeyRef": {"name": secret, "key": "auth_token"}},
            }
        )


def add_tls_config(container: JSONObject) -> None:
    """``SetContainerTLSConfig``: ``RAY_USE_TLS`` and the certificate paths, and the
    ``ray-tls`` mount read-only, each unless the container has it (a mount by name or
    path)."""
    env = child_list(container, "env")
    for name, value in (
        ("RAY_USE_TLS", "1"),
        ("RAY_TLS_SERVER_CERT", f"{TLS_MOUNT_PATH}/tls.crt"),
        ("RAY_TLS_SERVER_KEY", f"{TLS_MOUNT_PATH}/tls.key"),
        ("RAY_TLS_CA_CERT", f"{TLS_MOUNT_PATH}/ca.crt"),
    ):
        if not has_name(objects(env), name):
            env.append(env_var(name, value))
    mounts = child_list(container, "volumeMounts")
    if not any(
        m.get("name") == TLS_VOLUME or m.get("mountPath") == TLS_MOUNT_PATH for m in objects(mounts)
    ):
        mounts.append({"name": TLS_VOLUME, "readOnly": True, "mountPath": TLS_MOUNT_PATH})


def ray_token_volume() -> JSONObject:
    """The projected service-account token Ray checks requests against (K8s auth)."""
    return {
        "name": RAY_TOKEN_VOLUME,
        "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]},
    }


def wait_gcs_ready_script(address: str) -> str:
    # The port part comes from the head's rayStartParams: one shell word, like there.
    address = shell_word(address)
    """The init container's loop: quiet for two minutes, then verbose, until the GCS
    answers. The exact text (tabs included) is KubeRay's, so pod specs compare equal."""
    lines = [
        (0, "SECONDS=0"),
        (0, "while true; do"),
        (1, "if (( SECONDS <= 120 )); then"),
        (2, f"if ray health-check --address {address} > /dev/null 2>&1; then"),
        (3, 'echo "GCS is ready."'),
        (3, "break"),
        (2, "fi"),
        (2, 'echo "$SECONDS seconds elapsed: Waiting for GCS to be ready."'),
        (1, "else"),
        (2, f"if ray health-check --address {address}; then"),
        (3, 'echo "GCS is ready. Any error messages above can be safely ignored."'),
        (3, "break"),
        (2, "fi"),
        (
            2,
            'echo "$SECONDS seconds elapsed: Still waiting for GCS to be ready. '
            "For troubleshooting, refer to the FAQ at "
            'https://docs.ray.io/en/master/cluster/kubernetes/troubleshooting.html."',
        ),
        (1, "fi"),
        (1, "sleep 5"),
        (0, "done"),
    ]
    body = "".join("\n" + "\t" * (5 + depth) + line for depth, line in lines)
    return body + "\n" + "\t" * 4


def wait_gcs_ready_container(
    *, ray_container: JSONObject, address: str, command: list[str]
) -> JSONObject:
    """Blocks a worker until the head's GCS is up. Env and mounts are the user's Ray
    container's (TLS settings may live there), copied before the operator adds its own."""
    container: JSONObject = {
        "name": WAIT_GCS_READY,
        "image": ray_container.get("image", ""),
        "command": list[JSONValue](command),
        "args": [wait_gcs_ready_script(address)],
    }
    for key in ("env", "volumeMounts", "imagePullPolicy", "securityContext"):
        if ray_container.get(key):
            container[key] = copy.deepcopy(ray_container[key])
    container["resources"] = resources("200m", "256Mi")
    return in_go_order(container)


def supports_unified_health_check(ray_version: str | None) -> bool:
    """Ray >= 2.53.0, read like Kubernetes' ``version.ParseGeneric`` (trailing text such
    as ``rc1`` ignored; fewer than two components or garbage -> False)."""
    match = _VERSION.match(ray_version or "")
    if match is None:
        return False
    parts = match.group(1).split(".")
    if len(parts) < 2 or (parts[0].startswith("0") and parts[0] != "0"):
        return False
    numbers = tuple(int(part) for part in parts)
    padded = numbers + (0,) * max(0, 3 - len(numbers))
    return padded >= UNIFIED_HEALTH_CHECK_SINCE


def _port_param(params: Mapping[str, str], key: str, default: int) -> int:
    raw = params.get(key, "")
    if re.fullmatch(r"[+-]?[0-9]+", raw) and -(2**31) <= int(raw) < 2**31:
        return int(raw)
    return default


def add_probes(
    *,
    container: JSONObject,
    node_type: NodeType,
    creator: CreatorKind,
    params: Mapping[str, str],
    ray_version: str | None,
) -> None:
    """Liveness and readiness probes, each only if the user defined none."""
    agent_port = _port_param(params, "dashboard-agent-listen-port", DEFAULT_DASHBOARD_AGENT_PORT)
    commands = [_WGET.format(timeout=2, port=agent_port, path="api/local_raylet_healthz")]
    if node_type is NodeType.HEAD:
        dashboard_port = _port_param(params, "dashboard-port", DEFAULT_DASHBOARD_PORT)
        commands.append(_WGET.format(timeout=10, port=dashboard_port, path="api/gcs_healthz"))
    http = supports_unified_health_check(ray_version)
    head = node_type is NodeType.HEAD

    def handler(cmds: list[str], *, allow_http: bool) -> JSONObject:
        if http and allow_http:
            return {"httpGet": {"path": "/api/healthz", "port": agent_port}}
        return {"exec": {"command": ["bash", "-c", " && ".join(cmds)]}}

    if container.get("livenessProbe") is None:
        container["livenessProbe"] = _probe(handler(commands, allow_http=True), 30, head, 120)
    if container.get("readinessProbe") is None:
        serving_worker = creator == "RayService" and node_type is NodeType.WORKER
        if serving_worker:
            # A worker only takes traffic once its Serve proxy answers.
            serve_port = find_container_port(container, "serve", DEFAULT_SERVE_PORT)
            commands.append(_WGET.format(timeout=10, port=serve_port, path="-/healthz"))
        probe = _probe(
            handler(commands, allow_http=not serving_worker), 10, head, 1 if serving_worker else 10
        )
        container["readinessProbe"] = probe


def _probe(
    action: JSONObject, initial_delay: int, head: bool, failure_threshold: int
) -> JSONObject:
    return {
        **action,
        "initialDelaySeconds": initial_delay,
        # The head checks two endpoints in one probe, hence the longer timeout.
        "timeoutSeconds": 5 if head else 2,
        "periodSeconds": 5,
        "successThreshold": 1,
        "failureThreshold": failure_threshold,
    }
