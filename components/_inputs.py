"""Pulumi Inputs against the API models: parse, validate, and report like a Pulumi input error.

A component argument may be a model instance, a dict in snake_case or camelCase, or any
of those with ``pulumi.Output`` values anywhere inside (a Namespace's name, an image tag, a
whole worker group built with ``apply``). Three jobs live here:

- ``has_outputs``: whether a value can be validated now, at program time, or only once its
  Outputs resolve;
- ``parse_object``: ``operator_runtime.api``'s parse (the models, and the Kubernetes
  schema of every pod template and other embedded object) and rules, with every mistake
  of the object in one ``RayInputError``, one line each naming the object, the wire field
  path and a fix, so the engine prints a message rather than a pydantic dump or a
  traceback;
- ``to_wire``: the wire (camelCase) form of a value WITHOUT resolving its Outputs, so a
  nested secret stays a nested secret in what the custom resource is given (the SDK
  serializes each nested Output on its own), and ``redact_secrets`` for hashing such a
  value without publishing a hash of a secret. (The Kubernetes provider then marks the
  nearest enclosing list as secret, e.g. a pod's ``containers``, not the whole spec.)
"""

from __future__ import annotations

import asyncio
import functools
import typing
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final, TypeVar

import pulumi
from pydantic import BaseModel, TypeAdapter, ValidationError

from operator_runtime.api import (
    FeatureGates,
    InvalidObjectError,
    check_object,
    load_object,
)
from operator_runtime.api import parse_object as parse_document
from operator_runtime.api.modeltree import field_of, item_type, model_class, wire_path

__all__ = [
    "SECRET_MARKER",
    "RayInputError",
    "has_outputs",
    "object_ref",
    "parse_object",
    "redact_secrets",
    "to_wire",
    "wire_path",
]

SECRET_MARKER: Final = "<secret>"
"""Stands in for a secret value where a value is hashed (see ``redact_secrets``)."""

ModelT = TypeVar("ModelT", bound=BaseModel)


class RayInputError(pulumi.RunError, pulumi.InputPropertyError):
    """A component argument the operator or the API server would refuse.

    A ``RunError`` so the Pulumi language host prints the message alone, without a
    Python traceback; an ``InputPropertyError`` so a component provider reports it
    against ``property_path`` (the first mistake's). The message is the API layer's, one
    line per mistake of the object::

        RayCluster team-a/demo: spec.workerGroupSpecs[0].minReplicas: worker group gpu
        has minReplicas 3 greater than maxReplicas 1; set minReplicas <= maxReplicas
        [RAYCLUSTER_MIN_GT_MAX]

    (one line, wrapped here).
    """

    def __init__(
        self,
        object_ref: str,
        path: str,
        detail: str,
        hint: str,
        code: str,
        *,
        lines: Sequence[str] = (),
    ) -> None:
        self.object_ref = object_ref
        self.property_path = path
        self.reason = detail
        self.hint = hint
        self.code = code
        self.lines: tuple[str, ...] = tuple(lines) or (
            f"{object_ref}: {path}: {detail}; {hint} [{code}]",
        )
        Exception.__init__(self, "\n".join(self.lines))

    @classmethod
    def from_invalid(cls, error: InvalidObjectError) -> RayInputError:
        """Every violation of an ``InvalidObjectError``; the first one gives the path."""
        first = error.violation
        return cls(
            error.object_ref, first.path, first.detail, first.hint, first.code.value,
            lines=error.lines(),
        )  # fmt: skip

    @property
    def path(self) -> str:
        return self.property_path


def object_ref(kind: str, namespace: object, name: object) -> str:
    """``RayCluster team-a/demo``; ``RayCluster demo`` without a namespace."""
    shown = name if isinstance(name, str) and name else "<unnamed>"
    if isinstance(namespace, str) and namespace:
        return f"{kind} {namespace}/{shown}"
    return f"{kind} {shown}"


# --- Outputs ---------------------------------------------------------------------------


def has_outputs(value: object) -> bool:
    """Whether ``value`` holds an Output or other awaitable anywhere (models cannot)."""
    if isinstance(value, pulumi.Output | Awaitable):
        return True
    if isinstance(value, Mapping):
        return any(has_outputs(item) for item in value.values())
    if isinstance(value, list | tuple):
        return any(has_outputs(item) for item in value)
    return False


# --- parse and validate ----------------------------------------------------------------


def parse_object(
    model: type[ModelT],
    wire: Mapping[str, object],
    gates: FeatureGates,
    *,
    kind: str,
    checks: Sequence[Callable[[ModelT], None]] = (),
) -> ModelT:
    """Parse a whole ray.io/v1 object, run the component's own ``checks`` (they can say
    more than the operator's rule about the same field), then the operator's validation.
    Raises ``RayInputError`` with every mistake the parse finds, or else the first
    component check that fails, or else every rule the object breaks."""
    document = {**wire, "kind": kind}
    try:
        parsed = parse_document(document)
    except InvalidObjectError:
        try:  # the same mistakes, with every broken rule too when the model parsed
            load_object(document, gates)
        except InvalidObjectError as error:
            raise RayInputError.from_invalid(error) from None
        raise
    if not isinstance(parsed, model):
        raise TypeError(f"{kind} parsed as {type(parsed).__name__}, not {model.__name__}")
    for check in checks:
        check(parsed)
    try:
        check_object(typing.cast(Any, parsed), gates)
    except InvalidObjectError as error:
        raise RayInputError.from_invalid(error) from None
    return parsed


# --- wire form without resolving Outputs ----------------------------------------------


@functools.lru_cache(maxsize=256)
def _adapter(annotation: Any) -> TypeAdapter[Any]:
    return TypeAdapter(annotation)


def _dump_known(annotation: object, value: object) -> object:
    """A known value in wire form: only what was given, camelCase, no nulls. A value that
    does not parse is passed on as it is: the validation of the whole object reports it."""
    if annotation is None:
        return value
    adapter = _adapter(annotation)
    try:
        parsed = adapter.validate_python(value)
    except ValidationError:
        return value
    return adapter.dump_python(
        parsed, mode="json", by_alias=True, exclude_unset=True, exclude_none=True
    )


def to_wire(annotation: object, value: object) -> object:
    """``value`` in wire form, with every Output left where it is (mapped through ``apply``).

    ``annotation`` is the type at this point of the model tree (``None`` past the last
    field we know); free-form JSON such as a pod template keeps its own keys.
    """
    if not has_outputs(value):
        return _dump_known(annotation, value)
    if isinstance(value, pulumi.Output):
        return value.apply(lambda resolved: to_wire(annotation, resolved))
    model = model_class(annotation)
    if model is not None and isinstance(value, Mapping):
        wire: dict[str, object] = {}
        for key, item in value.items():
            found = field_of(model, str(key))
            if found is None:
                wire[str(key)] = item
            else:
                wire[found[0]] = to_wire(found[1].annotation, item)
        return wire
    item_annotation = item_type(annotation)
    if isinstance(value, Mapping):
        return {str(k): to_wire(item_annotation, item) for k, item in value.items()}
    if isinstance(value, list | tuple):
        return [to_wire(item_annotation, item) for item in value]
    return value


async def _false() -> bool:
    return False


def _redacted(output: pulumi.Output[Any]) -> pulumi.Output[Any]:
    async def value() -> object:
        if await output.is_secret():
            return SECRET_MARKER
        return redact_secrets(await output.future())

    return pulumi.Output(output.resources(), value(), output.is_known(), _false())


def redact_secrets(value: object) -> object:
    """``value`` with every secret Output replaced by ``SECRET_MARKER`` (and no longer
    secret), unknown values kept unknown. Hashing the result cannot leak a secret: even a
    short hash of a weak password lets anyone who can list the objects test guesses."""
    if isinstance(value, pulumi.Output):
        return _redacted(value)
    if isinstance(value, Awaitable):
        return _redacted(pulumi.Output.from_input(asyncio.ensure_future(value)))
    if isinstance(value, Mapping):
        return {k: redact_secrets(item) for k, item in value.items()}
    if isinstance(value, list | tuple):
        return [redact_secrets(item) for item in value]
    return value
