"""The components' typed ``status`` outputs, written from the API models' own status
classes, and the committed copy the package schema is analyzed from::

    python -m components.statustypes           # rewrite components/status.py
    python -m components.statustypes --check   # exit 1 with a diff if it is stale

``operator_runtime.api`` defines a RayCluster's status once (``RayClusterStatus`` and the
models it holds). A component's ``status`` output is that status as the Kubernetes
provider read it: wire (camelCase) keys, times and quantities as strings. So each status
model becomes a ``TypedDict`` keyed by its wire names: a Python program indexes it as
the dict it always was (``status["state"]``, now checked by mypy), and Pulumi's analyzer
turns it into an object type of the package schema, so YAML, TypeScript and Go read
``status.state`` typed. The file is generated rather than written by hand so that a field
added to a status model reaches every language at the next ``python -m
components.statustypes``; ``--check`` (in ``make lint``) fails while it has not.

The generator only imports ``operator_runtime.api`` and pydantic: it never imports the
module it writes, so a stale ``status.py`` cannot shape its own replacement.
"""

from __future__ import annotations

import argparse
import datetime
import sys
import types
import typing
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Final

from pydantic import AwareDatetime, BaseModel

from operator_runtime import api
from operator_runtime.api.modeltree import strip_optional

from ._golden import write_or_check

__all__ = ["ROOTS", "STATUS_FILE", "main", "status_module_text"]

STATUS_FILE: Final = Path(__file__).with_name("status.py")

ROOTS: Final[tuple[type[BaseModel], ...]] = (
    api.RayClusterStatus,
    api.RayJobStatus,
    api.RayServiceStatuses,
    api.RayCronJobStatus,
)
"""The ``status`` model of each kind a component creates; the models they hold follow."""

_HEADER: Final = '''"""Typed ``status`` outputs of the components: one ``TypedDict`` per
status model of ``operator_runtime.api``, keyed by wire (camelCase) names, as the
Kubernetes provider reads a status. GENERATED from those models by ``python -m
components.statustypes``; do not edit (its ``--check`` fails on a hand edit)."""

from typing import TypedDict

__all__ = [
{names}
]
'''


def _scalar(annotation: object) -> str | None:
    """The wire type of a leaf: what a status read from the API server holds."""
    if annotation is str or typing.get_origin(annotation) is typing.Literal:
        return "str"
    if annotation is bool:
        return "bool"
    if annotation is int:
        return "int"
    if annotation is float:
        return "float"
    if annotation in (datetime.datetime, AwareDatetime):
        return "str"  # metav1.Time: RFC 3339 text on the wire
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = set(typing.get_args(annotation))
        if members == {str, int}:
            return "str"  # resource.Quantity: the API server answers with its string form
    return None


def _type_text(annotation: object, pending: list[type[BaseModel]]) -> str:
    """The TypedDict annotation for a model field's annotation; models met are queued.
    Raises ``TypeError`` for an annotation with no wire type here."""
    stripped = strip_optional(annotation)
    scalar = _scalar(stripped)
    if scalar is not None:
        return scalar
    if isinstance(stripped, type) and issubclass(stripped, BaseModel):
        pending.append(stripped)
        return stripped.__name__
    origin = typing.get_origin(stripped)
    arguments = typing.get_args(stripped)
    if origin is list and len(arguments) == 1:
        return f"list[{_type_text(arguments[0], pending)}]"
    if origin is dict and len(arguments) == 2 and arguments[0] is str:
        return f"dict[str, {_type_text(arguments[1], pending)}]"
    # Pulumi's schema has no type for it either (a union, free-form JSON): say which
    # status field needs a decision here rather than publish it as ``Any``.
    raise TypeError(f"no status output type for the annotation {annotation!r}")


def _docstring(text: str | None, indent: str) -> str:
    cleaned = " ".join((text or "").split()).replace("\\", "\\\\").replace('"""', "'''")
    return f'{indent}"""{cleaned}"""\n' if cleaned else ""


def _class_text(model: type[BaseModel], pending: list[type[BaseModel]]) -> str:
    lines = [f"class {model.__name__}(TypedDict, total=False):\n"]
    lines.append(_docstring(model.__doc__, "    ") or '    """"""\n')
    for name, info in model.model_fields.items():
        wire_name = info.alias or name
        # ``| None`` as well as ``total=False``: Pulumi's analyzer at the floor
        # (pulumi 3.224) reads only a union with None as optional, later ones either.
        lines.append(f"\n    {wire_name}: {_type_text(info.annotation, pending)} | None\n")
        lines.append(_docstring(info.description, "    "))
    return "".join(lines)


def _models_in_order() -> Iterator[tuple[type[BaseModel], str]]:
    """Every model reachable from ``ROOTS``, each once, a model after those it holds
    (so the module needs no forward references), with its class text."""
    done: set[type[BaseModel]] = set()
    stack: list[type[BaseModel]] = list(reversed(ROOTS))
    while stack:
        model = stack[-1]
        if model in done:
            stack.pop()
            continue
        held: list[type[BaseModel]] = []
        text = _class_text(model, held)
        waiting = [m for m in held if m not in done and m is not model]
        if waiting:
            stack.extend(reversed(waiting))
            continue
        stack.pop()
        done.add(model)
        yield model, text


def status_module_text() -> str:
    classes = list(_models_in_order())
    names = "\n".join(f'    "{model.__name__}",' for model, _ in sorted(
        classes, key=lambda item: item[0].__name__
    ))  # fmt: skip
    body = "\n\n".join(text for _, text in classes)
    return _HEADER.format(names=names) + "\n\n" + body.rstrip("\n") + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m components.statustypes")
    parser.add_argument("--check", action="store_true", help="fail if status.py is stale")
    args = parser.parse_args(argv)
    return write_or_check(
        STATUS_FILE,
        status_module_text(),
        check=args.check,
        remedy="python -m components.statustypes",
    )


if __name__ == "__main__":
    sys.exit(main())
