"""Embedded Kubernetes objects (pod templates, services, env lists) checked offline
against the Kubernetes schema the project bundles (``api/schemas/k8s-v1.34.json``).

The models keep these objects as plain JSON, so a typo such as ``imagePullPolicey``
would pass them. The API server then either refuses the whole object (strict field
validation) or, by default, prunes the unknown key with only a warning, and the Pod
runs without it. Here each value is walked against the same definitions the CRDs are
generated from (``_structural``): unknown fields (with the closest known name), wrong
types, required fields, quantities (``resource.Quantity``'s grammar) and the values of
Kubernetes' enum types, which the OpenAPI document does not list (``ENUMS``) and which
only pod validation would refuse, when the operator creates the Pod.

Like the API server, a ``null`` is treated as absent (so the ``creationTimestamp: null``
that client tools write is no error), and a template's ``metadata`` takes
only the fields an embedded ObjectMeta keeps (labels, annotations, name, namespace,
finalizers).
"""

from __future__ import annotations

import difflib
import functools
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final

from pydantic.alias_generators import to_camel

from operator_runtime.api._structural import (
    EMBEDDED_META_FIELDS,
    INT_OR_STRING,
    OBJECT_META,
    QUANTITY,
    QUANTITY_PATTERN,
)
from operator_runtime.api.errors import ErrorCode, Violation

SCHEMA_FILE: Final = Path(__file__).resolve().parents[1] / "schemas" / "k8s-v1.34.json"
TIME: Final = "io.k8s.apimachinery.pkg.apis.meta.v1.Time"

_CORE: Final = "io.k8s.api.core.v1."
_SERVICE_TRAFFIC: Final = ("Cluster", "Local")
ENUMS: Final[Mapping[tuple[str, str], tuple[str, ...]]] = {
    (_CORE + "Container", "imagePullPolicy"): ("Always", "IfNotPresent", "Never"),
    (_CORE + "Container", "terminationMessagePolicy"): ("File", "FallbackToLogsOnError"),
    (_CORE + "Container", "restartPolicy"): ("Always",),
    (_CORE + "PodSpec", "restartPolicy"): ("Always", "OnFailure", "Never"),
    (_CORE + "PodSpec", "dnsPolicy"): (
        "ClusterFirstWithHostNet", "ClusterFirst", "Default", "None",
    ),
    (_CORE + "PodSpec", "preemptionPolicy"): ("PreemptLowerPriority", "Never"),
    (_CORE + "ContainerPort", "protocol"): ("TCP", "UDP", "SCTP"),
    (_CORE + "ServicePort", "protocol"): ("TCP", "UDP", "SCTP"),
    (_CORE + "Toleration", "operator"): ("Exists", "Equal"),
    (_CORE + "Toleration", "effect"): ("NoSchedule", "PreferNoSchedule", "NoExecute"),
    (_CORE + "NodeSelectorRequirement", "operator"): (
        "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt",
    ),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelectorRequirement", "operator"): (
        "In", "NotIn", "Exists", "DoesNotExist",
    ),
    (_CORE + "TopologySpreadConstraint", "whenUnsatisfiable"): ("DoNotSchedule", "ScheduleAnyway"),
    (_CORE + "VolumeMount", "mountPropagation"): ("None", "HostToContainer", "Bidirectional"),
    (_CORE + "HTTPGetAction", "scheme"): ("HTTP", "HTTPS"),
    (_CORE + "SeccompProfile", "type"): ("Unconfined", "RuntimeDefault", "Localhost"),
    (_CORE + "PodSecurityContext", "fsGroupChangePolicy"): ("OnRootMismatch", "Always"),
    (_CORE + "ContainerResizePolicy", "restartPolicy"): ("NotRequired", "RestartContainer"),
    (_CORE + "PersistentVolumeClaimSpec", "volumeMode"): ("Block", "Filesystem"),
    (_CORE + "PodOS", "name"): ("linux", "windows"),
    (_CORE + "ServiceSpec", "type"): ("ClusterIP", "NodePort", "LoadBalancer", "ExternalName"),
    (_CORE + "ServiceSpec", "sessionAffinity"): ("ClientIP", "None"),
    (_CORE + "ServiceSpec", "externalTrafficPolicy"): _SERVICE_TRAFFIC,
    (_CORE + "ServiceSpec", "internalTrafficPolicy"): _SERVICE_TRAFFIC,
}  # fmt: skip
"""The values of Kubernetes' enum types (``+enum`` in k8s.io/api core/v1, v1.34) for the
fields users set in templates. The OpenAPI document lists them only in prose, so the
API server accepts any string inside a custom resource; the Pod create then fails."""

_QUANTITY: Final = re.compile(QUANTITY_PATTERN)
_PLAIN_KEY: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_TYPE_NAMES: Final = {
    "object": "an object",
    "array": "a list",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean (true or false)",
}

Schema = Mapping[str, Any]


@functools.cache
def _definitions() -> Mapping[str, Schema]:
    """The bundled definitions, read once, on first use."""
    content = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    definitions: Mapping[str, Schema] = content["definitions"]
    return definitions


def definition_violations(definition: str, value: object, path: str) -> Iterator[Violation]:
    """Every way ``value``, found at wire ``path``, breaks Kubernetes definition
    ``definition`` (e.g. ``io.k8s.api.core.v1.PodTemplateSpec``)."""
    yield from _definition(definition, value, path)


def key_path(path: str, key: str) -> str:
    """``path.key``, or ``path["nvidia.com/gpu"]`` for a key that is not a plain name."""
    return f"{path}.{key}" if _PLAIN_KEY.fullmatch(key) else f'{path}["{key}"]'


def _ref(node: Schema) -> str | None:
    if "$ref" in node:
        return str(node["$ref"]).rsplit("/", 1)[-1]
    all_of = node.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and "$ref" in all_of[0]:
        return str(all_of[0]["$ref"]).rsplit("/", 1)[-1]
    return None


def _definition(name: str, value: object, path: str) -> Iterator[Violation]:
    if value is None or name == TIME:
        return
    if name == QUANTITY:
        yield from _quantity(value, path)
    elif name == INT_OR_STRING:
        if isinstance(value, bool) or not isinstance(value, int | str):
            yield _wrong_type(value, "an integer or a string", path)
    elif name == OBJECT_META:
        yield from _object(_embedded_meta(), value, path, name)
    else:
        yield from _object(_definitions()[name], value, path, name)


@functools.cache
def _embedded_meta() -> Schema:
    raw = _definitions()[OBJECT_META]
    return {"type": "object", "properties": {k: raw["properties"][k] for k in EMBEDDED_META_FIELDS}}


def _node(node: Schema, value: object, path: str) -> Iterator[Violation]:
    if value is None:
        return
    ref = _ref(node)
    if ref is not None:
        yield from _definition(ref, value, path)
        return
    kind = node.get("type")
    if kind == "object":
        yield from _object(node, value, path, "")
    elif kind == "array":
        if not isinstance(value, list):
            yield _wrong_type(value, "a list", path)
            return
        for index, item in enumerate(value):
            yield from _node(node.get("items", {}), item, f"{path}[{index}]")
    elif kind in _TYPE_NAMES and not _has_type(value, kind):
        yield _wrong_type(value, _TYPE_NAMES[kind], path)


def _has_type(value: object, kind: str) -> bool:
    if isinstance(value, bool):
        return kind == "boolean"
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return isinstance(value, int)
    if kind == "number":
        return isinstance(value, int | float)
    return kind == "object" and isinstance(value, dict)


def _object(node: Schema, value: object, path: str, owner: str) -> Iterator[Violation]:
    if not isinstance(value, dict):
        yield _wrong_type(value, "an object", path)
        return
    properties: Schema = node.get("properties", {})
    extra = node.get("additionalProperties")
    for key, item in value.items():
        if item is None:
            continue  # absent, as for the API server (e.g. creationTimestamp: null)
        where = key_path(path, str(key))
        if key in properties:
            allowed = ENUMS.get((owner, key))
            if allowed is not None and isinstance(item, str) and item not in allowed:
                yield _bad_enum(item, allowed, where)
            yield from _node(properties[key], item, where)
        elif isinstance(extra, Mapping):
            yield from _node(extra, item, where)
        elif properties:
            yield unknown_field(str(key), sorted(properties), where)
    for key in node.get("required", ()):
        if value.get(key) is None:
            yield Violation(
                ErrorCode.FIELD_REQUIRED,
                key_path(path, key),
                "required field is missing",
                f"set {key}",
            )


def unknown_field(key: str, known: list[str], path: str) -> Violation:
    """An unknown key, with the known name it most likely meant."""
    camel = to_camel(key)
    if camel != key and camel in known:
        hint = (
            f"write {camel}: Kubernetes objects inside the spec keep Kubernetes' camelCase "
            "names, even from Python"
        )
    else:
        close = difflib.get_close_matches(key, known, n=1)
        hint = f"did you mean {close[0]}?" if close else f"remove it (known: {', '.join(known)})"
    return Violation(ErrorCode.FIELD_UNKNOWN, path, f"unknown field {key!r}", hint)


def _quantity(value: object, path: str) -> Iterator[Violation]:
    if isinstance(value, bool | float) or not isinstance(value, int | str):
        yield Violation(
            ErrorCode.FIELD_INVALID_QUANTITY,
            path,
            f"{value!r} is not a quantity",
            'write an integer or a quoted string such as "500m", "1.5" or "4Gi"',
        )
    elif isinstance(value, str) and not _QUANTITY.fullmatch(value):
        yield Violation(
            ErrorCode.FIELD_INVALID_QUANTITY,
            path,
            f"{value!r} is not a quantity",
            "write a number with an optional suffix (m, k, M, G, Ki, Mi, Gi, ...), "
            'e.g. "500m" or "4Gi"',
        )


def _wrong_type(value: object, expected: str, path: str) -> Violation:
    hint = f"give {expected}"
    if expected == "a string" and isinstance(value, int | float):
        hint = f'quote it: "{json.dumps(value)}"'
    return Violation(
        ErrorCode.FIELD_WRONG_TYPE, path, f"expected {expected}, got {_describe(value)}", hint
    )


def _bad_enum(value: str, allowed: tuple[str, ...], path: str) -> Violation:
    folded = [a for a in allowed if a.lower() == value.lower()]
    close = folded or difflib.get_close_matches(value, allowed, n=1, cutoff=0.5)
    hint = f"use one of {', '.join(allowed)}"
    if close:
        hint = f"did you mean {close[0]}? ({hint})"
    return Violation(ErrorCode.FIELD_INVALID_ENUM, path, f"{value!r} is not a valid value", hint)


def _describe(value: object) -> str:
    if isinstance(value, bool):
        return f"the boolean {json.dumps(value)}"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
