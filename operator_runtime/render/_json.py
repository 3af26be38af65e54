"""Small typed accessors over plain JSON objects (embedded Kubernetes objects).

Pod templates stay plain JSON (see ``operator_runtime.api.common``); these helpers let
the builders read them under ``mypy --strict`` without casts at every step, treating a
missing or mistyped field the way Go's zero values would (absent == empty).
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Iterable, Mapping
from decimal import Decimal

from operator_runtime.api import JSONObject, JSONValue


def obj(value: JSONValue | None) -> JSONObject:
    """``value`` if it is an object, else a new empty one."""
    return value if isinstance(value, dict) else {}


def child(parent: JSONObject, key: str) -> JSONObject:
    """The object at ``parent[key]``, created (and stored) if absent."""
    value = parent.get(key)
    if not isinstance(value, dict):
        value = {}
        parent[key] = value
    return value


def child_list(parent: JSONObject, key: str) -> list[JSONValue]:
    """The list at ``parent[key]``, created (and stored) if absent."""
    value = parent.get(key)
    if not isinstance(value, list):
        value = []
        parent[key] = value
    return value


def objects(value: JSONValue | None) -> list[JSONObject]:
    """The objects in a list (non-objects skipped); the same dicts, not copies."""
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, dict)]


def text(value: JSONValue | None) -> str:
    """``value`` if it is a string, else ``""`` (Go's zero value)."""
    return value if isinstance(value, str) else ""


def string_map(value: JSONValue | None) -> dict[str, str]:
    """A ``map[string]string`` read from JSON (non-string values skipped)."""
    return {k: v for k, v in obj(value).items() if isinstance(v, str)}


def deep_copy(value: JSONObject) -> JSONObject:
    """An independent copy, so builders never mutate the caller's model."""
    return copy.deepcopy(value)


def sorted_map(values: Mapping[str, str]) -> JSONObject:
    """A label/annotation map with sorted keys, as Go serialises maps. Keys and values
    become plain ``str`` (StrEnum members would not serialise as YAML)."""
    return {str(key): str(values[key]) for key in sorted(values)}


def env_var(name: str, value: str) -> JSONObject:
    """A literal env var; an empty value is left out, as Go's ``omitempty`` does."""
    return {"name": name, "value": value} if value else {"name": name}


def field_ref_env(name: str, field_path: str) -> JSONObject:
    """An env var read from the pod's own metadata (downward API)."""
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": field_path}}}


def has_name(items: Iterable[JSONObject], name: str) -> bool:
    """Whether some item (env var, volume, mount, container) has this name."""
    return any(item.get("name") == name for item in items)


def in_field_order(value: JSONObject, fields: tuple[str, ...]) -> JSONObject:
    """``value`` with the listed keys first, in that order (Go struct order); the
    other keys follow in their own order. Cosmetic, but keeps output reviewable."""
    ordered: JSONObject = {key: value[key] for key in fields if key in value}
    ordered.update({key: item for key, item in value.items() if key not in ordered})
    return ordered


def go_json_float(value: float) -> str:
    """A float64 as Go's ``encoding/json`` writes it (``4`` not ``4.0``, ``1e+21``).

    Ray reads the ``resources`` JSON either way, but the generated command is compared
    byte for byte with KubeRay's (it lands in ``KUBERAY_GEN_RAY_START_CMD``).
    """
    if not math.isfinite(value):
        raise ValueError(f"{value!r} cannot be written as JSON")
    shortest = Decimal(repr(value))
    magnitude = abs(value)
    if magnitude == 0 or 1e-6 <= magnitude < 1e21:
        fixed = format(shortest, "f")
        if "." in fixed:
            fixed = fixed.rstrip("0").rstrip(".")
        return "0" if fixed in ("-0", "") else fixed
    sign, digits, exponent = shortest.normalize().as_tuple()
    assert isinstance(exponent, int)
    mantissa = str(digits[0]) + ("." + "".join(map(str, digits[1:])) if len(digits) > 1 else "")
    power = exponent + len(digits) - 1
    exp_text = f"e{'-' if power < 0 else '+'}{abs(power):02d}"
    # Go's encoder shortens a two-digit negative exponent (e-07 -> e-7), not a positive one.
    if power < 0 and abs(power) < 10:
        exp_text = f"e-{abs(power)}"
    return ("-" if sign else "") + mantissa + exp_text


def go_json_float_map(values: Mapping[str, float]) -> str:
    """``json.Marshal(map[string]float64)``: sorted keys, no spaces, Go float format."""
    items = (
        f"{json.dumps(key, ensure_ascii=False)}:{go_json_float(values[key])}"
        for key in sorted(values)
    )
    return "{" + ",".join(items) + "}"
