"""``python -m hack.image build|push REF|lock*``: the operator image (hack/image/__init__.py).

build          download the locked inputs (cached) and write dist/image/ (make image);
               then fetch the arm64 proof's emulator and build the scanner the tests run
push REF       push dist/image/ to REF (registry/repository:tag) and print REF@sha256:...
lock           re-resolve the Debian packages from apt's indexes into debian.lock (amd64)
               and debian-arm64.lock
lock-wheels    re-resolve the wheels with their hashes into requirements.lock (uv)
lock-emulator  re-pin qemu-user-static (the arm64 proof's emulator) in qemu.lock
"""

from __future__ import annotations

import argparse
import subprocess
import sys

from hack.image import DIST_DIR, built, debian, emulator, oci, pylock, scan
from hack.image import build as image_build
from hack.image.platform import PLATFORMS


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
    commands.add_parser("lock", help="re-resolve hack/image/debian*.lock from apt's indexes")
    commands.add_parser("lock-wheels", help="re-resolve hack/image/requirements.lock with uv")
    commands.add_parser("lock-emulator", help="re-pin qemu-user-static in hack/image/qemu.lock")
    arguments = parser.parse_args(argv)

    if arguments.command == "lock-wheels":
        path = pylock.lock(image_build.requirements(), image_build.CONSTRAINTS)
        print(f"{path}: review and commit it")
    elif arguments.command == "lock-emulator":
        (package,) = emulator.lock()
        print(f"{emulator.LOCK_FILE}: {package.name} {package.version}; review and commit it")
    elif arguments.command == "lock":
        for platform in PLATFORMS:
            packages = debian.lock(debian.OPERATOR, platform.arch)
            print(
                f"{debian.OPERATOR.lock_path(platform.arch)}: {len(packages)} packages; "
                "review and commit it"
            )
    elif arguments.command == "build":
        image = image_build.build(DIST_DIR)
        print(image.describe())
        # What the image tests (tests/integration/image) run in the sandbox, made while
        # online: the arm64 proof's emulator and the scanner (built once).
        emulator.emulator()
        scan.SYFT.binary()
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
