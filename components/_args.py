"""From what a caller gave to one args dataclass: the three ways a component is called.

Every component is ``Component(name, args, opts)`` with a dataclass of arguments, the one
definition of what it takes (Pulumi's analyzer reads its annotations into the package
schema). It arrives in one of three shapes:

- the dataclass itself, from a Python program;
- a plain dict of its fields (nested argument types as dicts too, enums already as
  members), which is what Pulumi's component provider passes when a YAML, TypeScript or
  Go program constructs the component;
- nothing, with the fields as keyword arguments instead (``RayCluster("demo",
  namespace="team-a", ...)``), Python sugar. A workload component also takes the fields
  of its spec as keyword arguments; those are handed back apart from the args.

The args classes never default to ``None`` in the signature because the analyzer reads
the ``args`` annotation as a class and cannot unwrap an ``Optional`` there; an empty
instance of the dataclass is the default instead, and ``None`` is accepted as the same.
"""

import dataclasses
import enum
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

import pulumi

__all__ = ["aliased", "build_args"]

ArgsT = TypeVar("ArgsT")


def _unwrapped(annotation: Any) -> Any:
    """The class inside ``X | None`` (and a ``pulumi.Input[X]``'s plain ``X``), if any."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        classes = [a for a in typing.get_args(annotation) if isinstance(a, type)]
        nested = [a for a in classes if dataclasses.is_dataclass(a) or issubclass(a, enum.Enum)]
        return nested[0] if nested else None
    return annotation


def from_mapping(cls: type[ArgsT], given: Mapping[str, object]) -> ArgsT:
    """The dataclass from a dict of its fields, nested dataclasses and enums included."""
    # The annotations as objects (what the analyzer reads too): get_type_hints would
    # trip over the forward reference inside ``pulumi.Input``.
    hints = {f.name: f.type for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    names = set(hints)
    unknown = sorted(set(given) - names)
    if unknown:
        raise TypeError(f"{cls.__name__} has no argument {', '.join(unknown)}")
    values: dict[str, object] = {}
    for key, value in given.items():
        inner = _unwrapped(hints[key])
        if isinstance(inner, type) and dataclasses.is_dataclass(inner):
            if isinstance(value, Mapping):
                value = from_mapping(inner, value)
        elif isinstance(inner, type) and issubclass(inner, enum.Enum) and isinstance(value, str):
            value = inner(value)
        values[key] = value
    return _with_defaults(cls, values)


def _with_defaults(cls: type[ArgsT], values: Mapping[str, object]) -> ArgsT:
    """``cls(**values)``, a None where the field has another default taken as that
    default: the schema cannot say "optional, default 1", so such a field is typed
    ``int | None = 1`` and None (or leaving it out, in any language) means 1."""
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    kept = {
        k: v
        for k, v in values.items()
        if v is not None
        or (
            fields[k].default in (None, dataclasses.MISSING)
            and fields[k].default_factory is dataclasses.MISSING
        )
    }
    return cls(**kept)


def build_args(
    cls: type[ArgsT],
    args: object,
    fields: Mapping[str, object],
    *,
    extra_fields: bool = False,
) -> tuple[ArgsT, dict[str, object]]:
    """The args from ``args`` or from keyword ``fields``, never both; with
    ``extra_fields`` the keywords that are not fields of ``cls`` are returned apart (a
    workload's spec fields), otherwise they are refused as Python refuses them."""
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    own = {k: v for k, v in fields.items() if k in names}
    rest = {k: v for k, v in fields.items() if k not in names}
    if rest and not extra_fields:
        raise TypeError(f"{cls.__name__} has no argument {', '.join(sorted(rest))}")
    given_args = args is not None and args != cls()
    if given_args and fields:
        raise TypeError(
            f"give the {cls.__name__} either as args or as keyword arguments "
            f"({', '.join(sorted(fields))}), not both"
        )
    if isinstance(args, cls) and given_args:
        return _with_defaults(cls, {f: getattr(args, f) for f in names}), rest
    if isinstance(args, Mapping):
        return from_mapping(cls, args), rest
    if args is not None and not isinstance(args, cls):
        raise TypeError(f"args must be a {cls.__name__}, got {type(args).__name__}")
    return _with_defaults(cls, own), rest


def aliased(opts: pulumi.ResourceOptions | None, old_type: str) -> pulumi.ResourceOptions:
    """``opts`` plus an alias to the component's type before the package was named
    ``ray`` (``pulumi-ray:index:...``): a stack created then is adopted, not replaced.
    An alias on the component covers its children, whose URNs embed the parent's type."""
    return pulumi.ResourceOptions.merge(
        opts, pulumi.ResourceOptions(aliases=[pulumi.Alias(type_=old_type)])
    )
