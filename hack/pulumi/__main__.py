"""``python -m hack.pulumi build|env|status``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hack.gobuild import cache_root
from hack.pulumi.build import BINARIES, engine, ensure_built
from hack.pulumi.environment import format_env
from hack.pulumi.sdk import LANGUAGES, compile_typescript_sdk, fetch_consumer_dependencies, generate

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
        choices=("build", "env", "status", "sdk", "sdk-deps"),
        help="build: compile the binaries (cached); env: shell exports for an offline engine "
        "(builds first if needed); status: which binaries of the current pins are built; "
        "sdk LANGUAGE OUT: generate our package's SDK from components/schema.json; "
        "sdk-deps: install what the SDK examples need (npm packages, Go modules)",
    )
    parser.add_argument("language", nargs="?", choices=LANGUAGES, help="`sdk`: nodejs or go")
    parser.add_argument("out", nargs="?", type=Path, help="`sdk`: a new or empty directory")
    parser.add_argument(
        "--compile",
        action="store_true",
        help="`sdk nodejs`: also compile it into OUT/bin, the npm package (needs `sdk-deps`)",
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
    if arguments.command == "sdk":
        if arguments.language is None or arguments.out is None:
            parser.error("sdk needs LANGUAGE and OUT")
        generate(arguments.language, arguments.out)
        if arguments.compile and arguments.language == "nodejs":
            print(compile_typescript_sdk(arguments.out))
        return 0
    if arguments.command == "sdk-deps":
        fetch_consumer_dependencies()
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
