"""Typed reads from the plain-JSON pod templates and env lists the models keep."""

from __future__ import annotations

from collections.abc import Sequence

from operator_runtime.api._base import JSONObject, JSONValue


def _obj(value: JSONValue | None) -> JSONObject:
    return value if isinstance(value, dict) else {}


def _objs(value: JSONValue | None) -> list[JSONObject]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _str(value: JSONValue | None) -> str:
    return value if isinstance(value, str) else ""


def pod_spec(template: JSONObject) -> JSONObject:
    """``template.spec`` (empty if missing)."""
    return _obj(template.get("spec"))


def containers(template: JSONObject) -> list[JSONObject]:
    """``template.spec.containers``; index 0 is the Ray container."""
    return _objs(pod_spec(template).get("containers"))


def volumes(template: JSONObject) -> list[JSONObject]:
    return _objs(pod_spec(template).get("volumes"))


def restart_policy(template: JSONObject) -> str:
    return _str(pod_spec(template).get("restartPolicy"))


def name_of(item: JSONObject) -> str:
    return _str(item.get("name"))


def env_of(container: JSONObject) -> list[JSONObject]:
    return _objs(container.get("env"))


def mounts_of(container: JSONObject) -> list[JSONObject]:
    return _objs(container.get("volumeMounts"))


def mount_path(mount: JSONObject) -> str:
    return _str(mount.get("mountPath"))


def find_env(env: Sequence[JSONObject], name: str) -> tuple[int, JSONObject] | None:
    """The first env var with this name and its index, like KubeRay's EnvVarByName."""
    return next(((i, var) for i, var in enumerate(env) if name_of(var) == name), None)


def env_value(var: JSONObject) -> str:
    """The literal ``value`` of an env var ("" when it uses valueFrom)."""
    return _str(var.get("value"))


def env_has_value(var: JSONObject) -> bool:
    """True if the env var has a non-empty literal value or a valueFrom source."""
    return env_value(var) != "" or var.get("valueFrom") is not None


def metadata_name(obj: JSONObject | None) -> str:
    """``metadata.name`` of an embedded object such as a Service."""
    return _str(_obj((obj or {}).get("metadata")).get("name"))
