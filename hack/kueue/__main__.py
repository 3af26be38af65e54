"""``python -m hack.kueue build [--force]``: build Kueue ahead of the batch tests.

They run it inside the sandbox, which has no network, so ``make kueue`` builds it here
first.
"""

from __future__ import annotations

import argparse
import sys

from hack.kueue import ensure_built


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hack.kueue", description="Build Kueue's controller manager (cached)."
    )
    parser.add_argument("command", choices=("build",))
    parser.add_argument("--force", action="store_true", help="rebuild even if cached")
    arguments = parser.parse_args(argv)
    print(ensure_built(force=arguments.force).bin_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
