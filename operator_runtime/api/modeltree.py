"""Walking the model tree by wire names: which field a camelCase (or snake_case) key
names, the element type of a list or map, and a pydantic error location as a wire path
(``spec.workerGroupSpecs[0].minReplicas``). Shared by the API layer's error messages
and the components, which map Pulumi inputs onto the same tree.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Sequence
from typing import Final

from pydantic import BaseModel
from pydantic.fields import FieldInfo

__all__ = ["field_of", "item_type", "model_class", "strip_optional", "wire_path"]

# Loc segments pydantic adds for the members of a union (``str``, ``list[...]``,
# ``function-after[...]``); they are not fields, so they never appear in a wire path.
_UNION_TAGS: Final = frozenset({"str", "int", "float", "bool", "none", "dict", "list"})


def strip_optional(annotation: object) -> object:
    """``Annotated[X, ...]`` -> X; ``X | None`` -> X; other unions stay as they are."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            members = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(members) != 1:
                return annotation
            annotation = members[0]
        else:
            return annotation


def model_class(annotation: object) -> type[BaseModel] | None:
    stripped = strip_optional(annotation)
    if isinstance(stripped, type) and issubclass(stripped, BaseModel):
        return stripped
    return None


def item_type(annotation: object) -> object | None:
    """The element type of ``list[X]``, or the value type of ``dict[str, X]``."""
    stripped = strip_optional(annotation)
    origin = typing.get_origin(stripped)
    arguments = typing.get_args(stripped)
    if origin is list and arguments:
        element: object = arguments[0]
        return element
    if origin is dict and len(arguments) == 2:
        value: object = arguments[1]
        return value
    return None


def field_of(model: type[BaseModel], key: str) -> tuple[str, FieldInfo] | None:
    """The field a key names, in Python or wire spelling, with its wire name."""
    for name, info in model.model_fields.items():
        if key in (name, info.alias):
            return (info.alias or name), info
    return None


def wire_path(model: type[BaseModel], loc: Sequence[int | str]) -> str:
    """A pydantic error location as a wire path: ``spec.workerGroupSpecs[0].minReplicas``."""
    path = ""
    annotation: object = model
    for step in loc:
        if isinstance(step, int):
            path += f"[{step}]"
            annotation = item_type(annotation)
            continue
        current = model_class(annotation)
        found = field_of(current, step) if current is not None else None
        if found is not None:
            wire_name, info = found
            path = f"{path}.{wire_name}" if path else wire_name
            annotation = info.annotation
        elif "[" in step or step in _UNION_TAGS:
            continue
        else:
            path = f"{path}.{step}" if path else step
            annotation = item_type(annotation)
    return path
