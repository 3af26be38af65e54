"""``python -m hack.pulumi build|env|status``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hack.gobuild import cache_root
from hack.pulumi.build import BINARIES, engine, ensure_built
from hack.pulumi.environment import format_env

# Outside the repository, like the binaries: nothing of a local engine run belongs in git.
DEFAULT_STATE_DIR = cache_root() / "pulumi" / "state"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hack.pulumi",
        description="Build the Pulumi CLI, Python language host and Kubernetes provider "
        "from pinned Go modules, and run them offline.",
    )
    parser.add_argument(
        "command",
        choices=("build", "env", "status"),
        help="build: compile the binaries (cached); env: shell exports for an offline engine "
        "(builds first if needed); status: which binaries of the current pins are built",
    )
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=DEFAULT_STATE_DIR,
        help=f"`env`: where PULUMI_HOME and the file backend live (default {DEFAULT_STATE_DIR})",
    )
    parser.add_argument("--force", action="store_true", help="`build`: rebuild even if cached")
    arguments = parser.parse_args(argv)

    if arguments.command == "build":
        built = ensure_built(force=arguments.force)
        print(built.bin_dir)
        return 0
    if arguments.command == "env":
        print(format_env(arguments.state_dir.resolve(), ensure_built()))
        return 0
    current = engine()
    for binary in BINARIES:
        print(f"{binary:<30} {'built' if current.path(binary).is_file() else 'missing'}")
    print(f"{'stamp':<30} {current.root / 'VERSIONS' if current.complete else 'missing'}")
    return 0 if current.complete else 1


if __name__ == "__main__":
    sys.exit(main())
