"""``python -m hack.prometheus fetch|lock``: Debian's Prometheus for the tests.

fetch   download (cached) and extract the locked package ahead of the tests (make prometheus)
lock    pin apt's current candidate in hack/prometheus/debian.lock
"""

from __future__ import annotations

import argparse
import sys

from hack.prometheus import LOCK_FILE, ensure, lock


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hack.prometheus", description=__doc__.split("\n")[0]
    )
    parser.add_argument("command", choices=("fetch", "lock"))
    arguments = parser.parse_args(argv)
    if arguments.command == "lock":
        package = lock()
        print(f"{LOCK_FILE}: {package.name} {package.version}; review and commit it")
    else:
        print(ensure().root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
