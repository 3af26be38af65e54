"""``python -m hack.image.redis build|lock``: the Redis image (hack/image/redis/__init__.py).

build   download the locked .debs (cached) and write dist/redis-image/ (make redis-image)
lock    re-resolve debian.lock from apt's indexes
"""

from __future__ import annotations

import argparse
import sys

from hack.image import debian
from hack.image.redis import DIST_DIR, REDIS_IMAGE
from hack.image.redis import build as redis_build


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hack.image.redis", description=__doc__.split("\n")[0]
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("build", help="build dist/redis-image/ from the locked .debs")
    commands.add_parser("lock", help="re-resolve hack/image/redis/debian.lock")
    arguments = parser.parse_args(argv)

    if arguments.command == "lock":
        packages = debian.lock(redis_build.BASE)
        print(f"{redis_build.BASE.lock_file}: {len(packages)} packages; review and commit it")
    else:
        image = redis_build.build(DIST_DIR)
        print(image.describe())
        print(f"loaded on the node as {REDIS_IMAGE} (a stand-in built here, not Redis's image)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
