"""The ``ray start`` command line KubeRay generates for a head or worker pod.

The flags are the group's ``rayStartParams`` plus what the operator adds (addresses,
ports, ``--block``) plus what it derives from the Ray container's resources (CPUs,
memory, GPUs, TPUs/Neuron cores). The rendered string is pinned byte for byte: it is
also exported to the container as ``KUBERAY_GEN_RAY_START_CMD``.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

from operator_runtime.api import JSONObject
from operator_runtime.api.labels import NodeType
from operator_runtime.render._json import go_json_float_map, obj
from operator_runtime.render.quantity import (
    QuantityError,
    parse_quantity,
    quantity_as_float,
    quantity_is_zero,
    quantity_value,
)

DEFAULT_GCS_PORT: Final = "6379"
DEFAULT_METRICS_PORT: Final = 8080
DEFAULT_DASHBOARD_AGENT_PORT: Final = 52365
# Flags whose "false" must reach `ray start` verbatim instead of being dropped.
EXPLICIT_BOOLEAN_FLAGS: Final = frozenset({"log-color", "include-dashboard", "include-log-monitor"})
# Container resource name -> Ray resource name, for accelerators Ray knows by name.
ACCELERATOR_RESOURCES: Final = MappingProxyType(
    {"aws.amazon.com/neuroncore": "neuron_cores", "google.com/tpu": "TPU"}
)
_MIG_GPU: Final = re.compile(r"nvidia\.com/mig-\d+g\.\d+gb$")


def _empty() -> Mapping[str, str]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class RayStartInput:
    """What decides the ``ray start`` flags of one pod."""

    node_type: NodeType
    params: Mapping[str, str] = field(default_factory=_empty)
    """The group's ``rayStartParams`` as the user wrote them."""
    container_resources: JSONObject = field(default_factory=dict)
    """``resources`` of the Ray container (container 0)."""
    group_resources: Mapping[str, str] = field(default_factory=_empty)
    """The group's top-level ``resources`` (Ray logical resources)."""
    group_labels: Mapping[str, str] = field(default_factory=_empty)
    """The group's top-level ``labels`` (Ray node labels)."""
    head_address: str = ""
    """Workers: ``<head FQDN>:<port>``."""
    autoscaling: bool = False
    redis_username_env: bool = False
    """``gcsFaultToleranceOptions.redisUsername`` is set (head)."""
    redis_password_env: bool = False
    """``gcsFaultToleranceOptions.redisPassword`` is set (head)."""


@dataclass(frozen=True, slots=True)
class RayStart:
    """The final flags and the command line rendered from them."""

    params: Mapping[str, str]
    command: str


def head_port(params: Mapping[str, str] | None) -> str:
    """The port workers dial: the head's ``port`` param, else 6379 (GCS)."""
    return (params or {}).get("port", DEFAULT_GCS_PORT)


def is_gpu_resource(name: str) -> bool:
    """``nvidia.com/gpu``, ``amd.com/gpu``, ... or an NVIDIA MIG slice."""
    return name.endswith("gpu") or _MIG_GPU.search(name) is not None


def build_ray_start(*, spec: RayStartInput) -> RayStart:
    """All flags of the pod's ``ray start`` and the command line."""
    params = dict(spec.params)
    _apply_group_resources(params, spec.group_resources)
    if spec.group_labels:
        params["labels"] = ",".join(
            f"{k}={spec.group_labels[k]}" for k in sorted(spec.group_labels)
        )
    _set_missing(params, spec)
    if spec.node_type is NodeType.HEAD:
        if spec.autoscaling:
            # The head's own monitor cannot scale a Kubernetes cluster; the sidecar does.
            params["no-monitor"] = "true"
        if spec.redis_username_env:
            params["redis-username"] = "$REDIS_USERNAME"
        if spec.redis_password_env:
            params["redis-password"] = "$REDIS_PASSWORD"
    _apply_container_resources(params, spec.container_resources)
    prefix = "ray start --head " if spec.node_type is NodeType.HEAD else "ray start "
    return RayStart(params=MappingProxyType(params), command=prefix + render_flags(params))


def render_flags(params: Mapping[str, str]) -> str:
    """Flags in sorted order, each as `` --k=v `` (a space on both sides); a boolean
    value renders as a bare `` --k `` (true) or nothing (false), except for the flags
    ``ray start`` needs spelled out."""
    out: list[str] = []
    for key in sorted(params):
        value = params[key]
        if value.lower() in ("true", "false") and key not in EXPLICIT_BOOLEAN_FLAGS:
            if value.lower() == "true":
                out.append(f" --{key} ")
        else:
            out.append(f" --{key}={shell_word(value)} ")
    return "".join(out)


_ENV_REFERENCE: Final = r"\$[A-Za-z_][A-Za-z0-9_]*|\$\{[A-Za-z_][A-Za-z0-9_]*\}"
_PLAIN: Final = re.compile(rf"(?:[A-Za-z0-9_@%+=:,./~-]|{_ENV_REFERENCE})*")
"""Characters bash reads literally, and ``$NAME``/``${NAME}`` references (the operator
itself passes ``$REDIS_PASSWORD``)."""
_SINGLE_QUOTED: Final = re.compile(r"'[^']*'")
_DOUBLE_QUOTED: Final = re.compile(rf'"(?:[^"\\$`]|\\.|{_ENV_REFERENCE})*"')


def shell_word(value: str) -> str:
    """``value`` as exactly one word of the ``bash -c`` command line.

    KubeRay pastes values in verbatim, so ``a b`` or ``1; rm -rf /`` breaks or extends
    the command. Values bash already reads as one word are kept byte for byte (plain
    values, ``$VAR`` references, and the quoted JSON users and KubeRay write, such as
    ``'{"TPU":4}'`` or ``"{\\"CPU\\": 1}"``); anything else is single-quoted."""
    if _PLAIN.fullmatch(value) or _SINGLE_QUOTED.fullmatch(value):
        return value
    if _DOUBLE_QUOTED.fullmatch(value):
        return value
    return shlex.quote(value)


def _set_missing(params: dict[str, str], spec: RayStartInput) -> None:
    if spec.node_type is NodeType.WORKER:
        params.setdefault("address", spec.head_address)
    else:
        # Ray's default (localhost) would hide the dashboard from the head Service.
        params.setdefault("dashboard-host", "0.0.0.0")
    params.setdefault("metrics-export-port", str(DEFAULT_METRICS_PORT))
    # Without --block the container's main process would exit right after start-up.
    params["block"] = "true"
    # The health probes dial this port, so it is pinned rather than left to Ray.
    params.setdefault("dashboard-agent-listen-port", str(DEFAULT_DASHBOARD_AGENT_PORT))


def _apply_group_resources(params: dict[str, str], resources: Mapping[str, str]) -> None:
    """The group's ``resources`` win over ``rayStartParams`` for CPU, memory and GPU;
    any other key replaces the ``resources`` JSON. Unparsable quantities are skipped."""
    custom: dict[str, float] = {}
    for name, raw in resources.items():
        try:
            quantity = parse_quantity(raw)
        except QuantityError:
            continue
        lowered = name.lower()
        if lowered == "cpu":
            params["num-cpus"] = str(quantity_value(raw))
        elif lowered == "memory":
            params["memory"] = str(quantity_value(raw))
        elif is_gpu_resource(lowered):
            params["num-gpus"] = str(quantity_value(raw))
        else:
            custom[name] = float(quantity)
    if custom:
        params["resources"] = f"'{go_json_float_map(custom)}'"


def _quantities(value: object) -> dict[str, str | int | float]:
    return {
        k: v
        for k, v in obj(value if isinstance(value, dict) else None).items()
        if isinstance(v, str | int | float) and not isinstance(v, bool)
    }


def _apply_container_resources(params: dict[str, str], resources: JSONObject) -> None:
    limits = _quantities(resources.get("limits"))
    requests = _quantities(resources.get("requests"))
    if "num-cpus" not in params:
        # A CPU limit wins; the request is the fallback. Both round up (500m -> 1).
        for source in (limits, requests):
            cpu = source.get("cpu")
            if cpu is not None and not quantity_is_zero(cpu):
                params["num-cpus"] = str(quantity_value(cpu))
                break
    memory = limits.get("memory")
    if "memory" not in params and memory is not None and not quantity_is_zero(memory):
        params["memory"] = str(quantity_value(memory))
    if limits:
        _apply_accelerators(params, limits)


def _apply_accelerators(params: dict[str, str], limits: Mapping[str, str | int | float]) -> None:
    existing = _parse_resources_param(params.get("resources"))
    if existing is None:
        return  # KubeRay gives up on GPUs and accelerators when the JSON is malformed.
    accelerator_done = any(name in existing for name in ACCELERATOR_RESOURCES.values())
    for key in sorted(limits):
        value = limits[key]
        if quantity_is_zero(value):
            continue
        if "num-gpus" not in params and is_gpu_resource(key):
            params["num-gpus"] = str(quantity_value(value))
        ray_name = ACCELERATOR_RESOURCES.get(key)
        if not accelerator_done and ray_name is not None:
            if ray_name not in existing:
                existing[ray_name] = quantity_as_float(value)
                params["resources"] = f"'{go_json_float_map(existing)}'"
            accelerator_done = True


def _parse_resources_param(raw: str | None) -> dict[str, float] | None:
    """The ``resources`` param as a map (quotes and spaces around it trimmed), or None
    if it is not a JSON object of numbers."""
    if raw is None:
        return {}
    try:
        parsed = json.loads(raw.strip("'\"` "))
    except ValueError:
        return None
    if not isinstance(parsed, dict):
        return None if parsed is not None else {}
    result: dict[str, float] = {}
    for key, value in parsed.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        result[key] = float(value)
    return result
