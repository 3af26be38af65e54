"""A controller plugin used by test_cli (``--controller-plugin`` target)."""

from __future__ import annotations

from collections.abc import Sequence

from operator_runtime.runtime.context import ControllerContext
from operator_runtime.runtime.reconcile import ObjectKey, Result, Watch
from operator_runtime.runtime.registry import ControllerRegistry


class Noop:
    name = "noop"

    def __init__(self, context: ControllerContext) -> None:
        self.context = context

    def watches(self) -> Sequence[Watch]:
        return ()

    def reconcile(self, key: ObjectKey) -> Result:
        return Result()


def register(registry: ControllerRegistry) -> None:
    registry.register("noop", Noop)
