"""A real Pulumi engine for tests: CLI, Python language host and Kubernetes provider.

All three are built from pinned Go modules (``python -m hack.pulumi build|env|status``)
into a cache outside the repository; :func:`engine_env` gives the offline environment
they run in. Tests use it through the session fixture in ``tests/e2e/conftest.py``.
"""

from __future__ import annotations

from pathlib import Path

from hack import gobuild
from hack.pulumi.build import Engine, engine, ensure_built
from hack.pulumi.environment import (
    engine_env,
    format_env,
    python_executable,
    use_project_virtualenv,
)

__all__ = [
    "Engine",
    "engine",
    "engine_env",
    "ensure_built",
    "format_env",
    "python_executable",
    "start_for_tests",
    "use_project_virtualenv",
]


def start_for_tests(state_dir: Path, *, less_gc: bool = False) -> tuple[Engine, dict[str, str]]:
    """Build (or reuse) the engine and return it with an environment rooted in ``state_dir``;
    ``less_gc`` adds ``gobuild.LESS_GC_ENV`` (the e2e tier: over its engine module, the
    engine's and the Kubernetes provider's CPU went from 51 to 36 s)."""
    built = ensure_built()
    env = engine_env(state_dir, built)
    return built, {**env, **gobuild.LESS_GC_ENV} if less_gc else env
