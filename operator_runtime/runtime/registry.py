"""Which controllers the operator runs.

A registry is built by the caller (``__main__`` builds one per process; tests build
their own), never a module-level singleton. Controllers are added as factories taking
the ``ControllerContext`` so their dependencies are injected when the manager is built;
a factory returns None when the context's settings turn its controller off (a feature
gate), so a controller is registered unconditionally and built only when enabled.
Later packages (``operator_runtime.controllers``) expose a ``register(registry)``
function; ``--controller-plugin module:function`` loads more, which is how the
integration tests add a test controller to a real operator process.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Collection

from operator_runtime.runtime.context import ControllerContext
from operator_runtime.runtime.reconcile import Controller

ControllerFactory = Callable[[ControllerContext], Controller | None]
"""Builds a controller from the context, or returns None when the settings disable it."""


class ControllerRegistry:
    def __init__(self) -> None:
        self._factories: dict[str, ControllerFactory] = {}

    def register(self, name: str, factory: ControllerFactory) -> None:
        if name in self._factories:
            raise ValueError(f"controller {name!r} is registered twice")
        self._factories[name] = factory

    def names(self) -> list[str]:
        return sorted(self._factories)

    def build(
        self, context: ControllerContext, only: Collection[str] | None = None
    ) -> list[Controller]:
        """Build the registered controllers, or only those named in ``only``; a
        controller its factory declines (None: disabled) is left out."""
        unknown = sorted(set(only or ()) - set(self._factories))
        if unknown:
            raise ValueError(f"unknown controllers {unknown}; registered: {self.names()}")
        names = [name for name in self.names() if only is None or name in only]
        built = (self._factories[name](context) for name in names)
        return [controller for controller in built if controller is not None]

    def load_plugin(self, spec: str) -> None:
        """Import ``module:function`` and call ``function(self)``."""
        module_name, _, function_name = spec.partition(":")
        if not module_name or not function_name:
            raise ValueError(f"controller plugin {spec!r} is not of the form module:function")
        register: Callable[[ControllerRegistry], None] = getattr(
            importlib.import_module(module_name), function_name
        )
        register(self)
