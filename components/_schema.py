"""Unknown fields inside the Kubernetes objects a spec embeds, found before the API server.

The models refuse unknown keys of their own, but pod templates, env sources and services
are free-form JSON to them. A key the CRD schema does not know there is a typo, or, from
Python, the snake_case spelling of a Kubernetes field (``container_port``,
``secret_key_ref``); depending on the client's field validation the API server either
refuses it late or prunes it silently, and a pruned ``secretKeyRef`` leaves a password
that is never set. So the components check the wire object against our own generated
CRD schema, which carries the full Kubernetes schema of every embedded object.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic.alias_generators import to_camel

from operator_runtime.api import crds

__all__ = ["first_unknown_field"]

Schema = Mapping[str, Any]


@functools.cache
def spec_schema(kind: str) -> Schema:
    """The ``spec`` schema of a kind, from the committed CRD (parsed once, on first use)."""
    manifest = next(m for m in crds.load_bundle() if m["spec"]["names"]["kind"] == kind)
    schema: Schema = manifest["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema["properties"]["spec"]  # type: ignore[no-any-return]


def _unknown(schema: Schema, value: object, path: str) -> Iterator[tuple[str, str, list[str]]]:
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return
    if isinstance(value, Mapping):
        properties: Schema = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            if key in properties:
                yield from _unknown(properties[key], item, f"{path}.{key}")
            elif isinstance(extra, Mapping):
                yield from _unknown(extra, item, f"{path}.{key}")
            elif properties and extra is not True:
                yield f"{path}.{key}", str(key), sorted(properties)
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(value):
            yield from _unknown(schema["items"], item, f"{path}[{index}]")


def first_unknown_field(kind: str, spec: object) -> tuple[str, str, str] | None:
    """``(path, detail, hint)`` of the first field the CRD does not know, else None."""
    for path, key, known in _unknown(spec_schema(kind), spec, "spec"):
        camel = to_camel(key)
        if camel != key and camel in known:
            hint = (
                f"write {camel}: Kubernetes objects inside the spec keep Kubernetes' "
                "camelCase names, even from Python"
            )
        else:
            close = difflib.get_close_matches(key, known, n=1)
            hint = f"remove it{f'; did you mean {close[0]}?' if close else ''}"
        return path, f"unknown field {key!r}", hint
    return None
