"""``python -m operator_runtime`` / ``ray-operator``: the operator, if it can run here.

``pip install pulumi-ray`` is what a Pulumi program needs; the operator's own
dependencies come with the ``operator`` extra. Without them, ``ray-operator`` would die
on its first import with a traceback naming a module; this entry point checks first
and says what to install, then hands over to ``operator_runtime.cli``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib.util import find_spec
from typing import Final

OPERATOR_EXTRA_MODULES: Final = (
    "kubernetes",
    "httpx",
    "httpcore",
    "prometheus_client",
    "pydantic_settings",
)
"""What the ``operator`` extra of pyproject.toml installs, by import name (a unit test
holds the two lists together)."""

MISSING_EXIT_CODE: Final = 2
"""The exit code of a start that cannot happen: as for a bad flag."""


def missing_operator_modules() -> list[str]:
    return [module for module in OPERATOR_EXTRA_MODULES if find_spec(module) is None]


def main(argv: Sequence[str] | None = None) -> int:
    missing = missing_operator_modules()
    if missing:
        print(
            f"ray-operator: the operator's dependencies are not installed "
            f"(no module {', '.join(missing)}); install them with: "
            f"pip install 'pulumi-ray[operator]'",
            file=sys.stderr,
        )
        return MISSING_EXIT_CODE
    from operator_runtime.cli import main as run

    return run(argv)


if __name__ == "__main__":
    sys.exit(main())
