"""``python -m hack.kuberay build [--force]``: build KubeRay's operator ahead of the tests.

The conformance tests and benchmarks run it inside the sandbox, which has no network, so
``make test`` builds it here first.
"""

from __future__ import annotations

import argparse
import sys

from hack.kuberay import ensure_built


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hack.kuberay", description="Build KubeRay's ray-operator (cached)."
    )
    parser.add_argument("command", choices=("build",))
    parser.add_argument("--force", action="store_true", help="rebuild even if cached")
    arguments = parser.parse_args(argv)
    print(ensure_built(force=arguments.force).bin_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
