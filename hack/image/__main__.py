"""``python -m hack.image build|push REF|lock``: the operator image (hack/image/__init__.py).

build       download the locked inputs (cached) and write dist/image/ (make image)
push REF    push dist/image/ to REF (registry/repository:tag) and print REF@sha256:...
lock        re-resolve the Debian packages from apt's indexes into debian.lock
"""

from __future__ import annotations

import argparse
import subprocess
import sys

from hack.image import DIST_DIR, built, debian, oci
from hack.image import build as image_build


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hack.image", description=__doc__.split("\n")[0]
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("build", help="build dist/image/ from the locked inputs")
    push = commands.add_parser("push", help="push the built image")
    push.add_argument(
        "ref", help="registry/repository:tag, e.g. registry.example/team/ray-operator:0.1.0"
    )
    commands.add_parser("lock", help="re-resolve hack/image/debian.lock from apt's indexes")
    arguments = parser.parse_args(argv)

    if arguments.command == "lock":
        packages = debian.lock(debian.OPERATOR)
        print(f"{debian.OPERATOR.lock_file}: {len(packages)} packages; review and commit it")
    elif arguments.command == "build":
        image = image_build.build(DIST_DIR)
        print(image.describe())
    else:
        image = built()
        pushed = subprocess.run(
            [str(oci.ocitool()), "push", "--layout", str(image.layout), arguments.ref],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        if pushed.returncode != 0:
            print(f"pushing {image.digest} to {arguments.ref} failed (see above)", file=sys.stderr)
            return pushed.returncode
        print(pushed.stdout.strip())
        print("give this reference to RayOperator(image=...)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
