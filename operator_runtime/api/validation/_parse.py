"""A raw ray.io/v1 document -> its model, or every mistake in it as ``Violation``s.

Two checks run over the same document and are reported together: the models' own
parse (pydantic: unknown fields of ours, wrong types, enum values), rewritten into wire
paths and plain sentences (no pydantic URLs, no model names), and the Kubernetes schema
of every embedded Kubernetes object the models keep as plain JSON (``_k8sschema``),
found by walking the document alongside the model classes, so it runs even when the
parse fails elsewhere.
"""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

from pydantic import BaseModel, ValidationError

from operator_runtime.api._base import K8sSchema
from operator_runtime.api.errors import ErrorCode, Violation
from operator_runtime.api.modeltree import field_of, item_type, model_class, wire_path
from operator_runtime.api.validation._k8sschema import (
    definition_violations,
    key_path,
    unknown_field,
)

_TYPE_HINTS: Final = {
    "int": "give an integer",
    "float": "give a number",
    "bool": "give true or false",
    "string": "give a string (quote it)",
    "list": "give a list",
    "dict": "give an object",
    "model": "give an object",
}


def _definition(annotation: object, metadata: Sequence[object] = ()) -> str | None:
    """The Kubernetes definition a field's type names through ``K8sSchema``, if any."""
    for item in metadata:
        if isinstance(item, K8sSchema):
            return item.definition
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            for item in annotation.__metadata__:  # type: ignore[attr-defined]
                if isinstance(item, K8sSchema):
                    return item.definition
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            members = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(members) != 1:
                return None
            annotation = members[0]
        else:
            return None


def _join(path: str, key: str) -> str:
    return key_path(path, key) if path else key


# --- the Kubernetes objects a document embeds -------------------------------------------


def embedded_violations(
    model: type[BaseModel], document: object, path: str = ""
) -> Iterator[Violation]:
    """Schema violations of every embedded Kubernetes object in ``document`` (raw JSON
    shaped like ``model``). Keys the model does not know are left to the parse."""
    if not isinstance(document, Mapping):
        return
    for key, value in document.items():
        found = field_of(model, str(key))
        if found is not None:
            wire, info = found
            yield from _value(info.annotation, info.metadata, value, _join(path, wire))


def _value(
    annotation: object, metadata: Sequence[object], value: object, path: str
) -> Iterator[Violation]:
    definition = _definition(annotation, metadata)
    if definition is not None:
        yield from definition_violations(definition, value, path)
        return
    model = model_class(annotation)
    if model is not None:
        yield from embedded_violations(model, value, path)
        return
    item = item_type(annotation)
    if item is None:
        return
    if isinstance(value, list):
        for index, element in enumerate(value):
            yield from _value(item, (), element, f"{path}[{index}]")
    elif isinstance(value, Mapping):
        for key, element in value.items():
            yield from _value(item, (), element, key_path(path, str(key)))


# --- pydantic's errors, as violations --------------------------------------------------


def _known_names(model: type[BaseModel], loc: Sequence[int | str]) -> list[str]:
    parent: object = model
    for step in loc:
        if isinstance(step, int):
            parent = item_type(parent)
        else:
            current = model_class(parent)
            found = field_of(current, step) if current is not None else None
            parent = found[1].annotation if found else None
    owner = model_class(parent)
    return sorted(info.alias or n for n, info in owner.model_fields.items()) if owner else []


def parse_violations(model: type[BaseModel], error: ValidationError) -> list[Violation]:
    """Each problem pydantic found, once, at its deepest location.

    A bad value inside a free-form JSON field fails every member of pydantic's JSON union
    at every depth; only the deepest location is the real one.
    """
    errors = [(wire_path(model, e["loc"]), e) for e in error.errors(include_url=False)]
    deepest = [
        (path, e)
        for path, e in errors
        if not any(other != path and other.startswith(path) for other, _ in errors)
    ]
    found: dict[str, Violation] = {}
    for path, item in deepest:
        if path not in found:
            found[path] = _violation(model, path, item)
    return list(found.values())


def _violation(model: type[BaseModel], path: str, item: Any) -> Violation:
    kind: str = item["type"]
    loc: Sequence[int | str] = item["loc"]
    if kind == "extra_forbidden":
        return unknown_field(str(loc[-1]), _known_names(model, loc[:-1]), path)
    if kind == "missing":
        return Violation(ErrorCode.FIELD_REQUIRED, path, "required field is missing", "set it")
    message: str = item["msg"]
    detail = message[0].lower() + message[1:]
    given = item.get("input")
    if isinstance(given, str | int | float | bool):
        detail = f"{detail}, got {given!r}"
    if kind in ("literal_error", "enum"):
        choices = message.removeprefix("Input should be ")
        return Violation(ErrorCode.FIELD_INVALID_ENUM, path, detail, f"use {choices}")
    if kind.endswith(("_type", "_parsing")):
        hint = _TYPE_HINTS.get(kind.split("_")[0], "give a value of the type the field takes")
        return Violation(ErrorCode.FIELD_WRONG_TYPE, path, detail, hint)
    hint = "change it as that says, or leave it out"
    return Violation(ErrorCode.FIELD_INVALID_VALUE, path, detail, hint)


def close_kind(kind: str, kinds: Sequence[str]) -> str:
    """A hint for an unknown kind."""
    close = difflib.get_close_matches(kind, kinds, n=1)
    return f"did you mean {close[0]}?" if close else f"use one of {', '.join(kinds)}"
