"""``python -m hack.image build|push|sign|verify|lock*``: the operator image (hack/image).

build          download the locked inputs (cached) and write dist/image/ (make image), or
               copy the build kept for the same sources, pins and recipe
               (hack/image/reuse.py); then fetch the arm64 proof's emulator, build the
               scanner and cosign
push REF       push dist/image/ to REF (registry/repository:tag) and print REF@sha256:...
sign REF --key KEY
               sign the pushed index REF (registry/repository@sha256:..., as push printed
               it) with the release's cosign key; offline: no transparency log (sign.py)
verify REF --key PUB
               check REF's signature with the release's public key, as a user would
lock           re-resolve the Debian packages from apt's indexes into debian.lock (amd64)
               and debian-arm64.lock
lock-wheels    re-resolve the wheels with their hashes into requirements.lock (uv)
lock-emulator  re-pin qemu-user-static (the arm64 proof's emulator) in qemu.lock
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from hack.image import DIST_DIR, built, debian, emulator, oci, pylock, reuse, scan, sign
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
    signing = commands.add_parser("sign", help="sign a pushed index with cosign")
    signing.add_argument("ref", help="registry/repository@sha256:<index digest>, as push printed")
    signing.add_argument("--key", required=True, help="the release's cosign key (file or KMS URI)")
    verifying = commands.add_parser("verify", help="verify a signed index with cosign")
    verifying.add_argument("ref", help="registry/repository@sha256:<index digest>")
    verifying.add_argument("--key", required=True, help="the release's public key (cosign.pub)")
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
        image = reuse.built_or_reused(
            "operator", DIST_DIR, reuse.recipe_key(*image_build.recipe_facts()),
            lambda: image_build.build(DIST_DIR, kept_trees=True), built, image_build.KEPT,
        )  # fmt: skip
        print(image.describe())
        # What the image tests (tests/integration/image) run in the sandbox, made while
        # online: the arm64 proof's emulator, the scanner and cosign (each built once).
        emulator.emulator()
        scan.SYFT.binary()
        sign.COSIGN.binary()
    elif arguments.command in ("sign", "verify"):
        return _sign_or_verify(arguments.command, arguments.ref, arguments.key)
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


def _sign_or_verify(command: str, reference: str, key: str) -> int:
    with tempfile.TemporaryDirectory(prefix="cosign-") as workdir:
        try:
            if command == "sign":
                sign.sign(reference, key, Path(workdir))
                print(f"signed {reference}")
            else:
                for verified in sign.verify(reference, key, Path(workdir)):
                    print(json.dumps(verified, sort_keys=True))
        except (sign.SigningError, sign.VerificationFailed) as error:
            print(error, file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
