"""What the validation tests share: mutations of a valid wire object, the case tables
turned into pytest params, and the codes each table must cover."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import pytest

from operator_runtime.api import ErrorCode

Obj = dict[str, Any]
Mutation = Callable[[Obj], None]


def do(*steps: Callable[[Obj], object]) -> Mutation:
    """All ``steps``, in order."""

    def mutate(o: Obj) -> None:
        for step in steps:
            step(o)

    return mutate


def spec_set(**fields: Any) -> Mutation:
    return lambda o: o["spec"].update(fields)


def case_params(cases: Iterable[Sequence[Any]]) -> list[Any]:
    """``(code, ...)`` rows as params named ``<code>-<row>``."""
    return [pytest.param(*case, id=f"{case[0].value}-{i}") for i, case in enumerate(cases)]


def codes(prefix: str) -> set[ErrorCode]:
    """Every error code of one kind, e.g. ``RAYJOB_``."""
    return {c for c in ErrorCode if c.value.startswith(prefix)}
