"""``python -m hack.gang build [NAME ...] [--force]``: build gang schedulers ahead of the
tests, which run them in the sandbox (no network)."""

from __future__ import annotations

import argparse
import sys

from hack.gang import SCHEDULERS, ensure_built


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hack.gang", description="Build gang schedulers (cached)."
    )
    parser.add_argument("command", choices=("build",))
    parser.add_argument(
        "names", nargs="*", metavar="NAME", help=f"default: all of {', '.join(sorted(SCHEDULERS))}"
    )
    parser.add_argument("--force", action="store_true", help="rebuild even if cached")
    arguments = parser.parse_args(argv)
    unknown = sorted(set(arguments.names) - set(SCHEDULERS))
    if unknown:
        parser.error(f"unknown scheduler {', '.join(unknown)}")
    for name in arguments.names or sorted(SCHEDULERS):
        print(ensure_built(name, force=arguments.force).bin_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
