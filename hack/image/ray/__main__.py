"""``python -m hack.image.ray build|lock``: the Ray image (hack/image/ray/__init__.py).

build   download the locked inputs (cached) and write dist/ray-image/ (make ray-image);
        with --newer, the newer Ray's image into dist/ray-image-newer/ (make ray-image-newer);
        a build of the same recipe and inputs kept in the build cache is copied instead
        (hack/image/reuse.py)
lock    re-resolve debian.lock from apt's indexes and python.lock from the index
"""

from __future__ import annotations

import argparse
import sys

from hack.image import debian, reuse
from hack.image.oci import recipe_date
from hack.image.ray import NEWER, STAND_IN, wheels
from hack.image.ray import build as ray_build


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hack.image.ray", description=__doc__.split("\n")[0]
    )
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("build", help="build dist/ray-image/ from the locked inputs")
    build.add_argument(
        "--newer", action="store_true", help=f"build Ray {NEWER.version}'s image instead"
    )
    commands.add_parser("lock", help="re-resolve hack/image/ray/debian.lock and python.lock")
    arguments = parser.parse_args(argv)

    if arguments.command == "lock":
        packages = debian.lock(ray_build.BASE)
        print(f"{ray_build.BASE.lock_file}: {len(packages)} packages")
        locked = wheels.lock()
        print(f"{wheels.LOCK_FILE}: {len(locked)} wheels; review and commit both")
    else:
        release = NEWER if arguments.newer else STAND_IN
        key = reuse.recipe_key(  # no path: a clone elsewhere builds the same image
            release.version, release.ray_lock.name, ",".join(release.extras),
            recipe_date(ray_build.RECIPE).isoformat(),
        )  # fmt: skip
        image = reuse.built_or_reused(
            f"ray-{release.version}", release.dist_dir, key,
            lambda: ray_build.build(release.dist_dir, release), release.built,
        )  # fmt: skip
        print(image.describe())
        print(f"loaded on the node as {release.image} (a stand-in built here, not Ray's image)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
