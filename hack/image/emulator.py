"""Debian's qemu-user-static, to run another platform's image on the build machine.

The proof that the arm64 image works (tests/integration/image) runs its interpreter under
user-mode emulation, called explicitly with the image's root as the library prefix
(``qemu-aarch64-static -L <rootfs> <rootfs>/usr/bin/python3.11``). Nothing is
registered with the kernel (no binfmt_misc handler): the machine is left as it was,
and a foreign binary started any other way still fails.

The emulator is one pinned .deb (``qemu.lock``: apt's signed indexes give the hash,
``debian.fetch`` checks it), of which only the statically linked ``qemu-aarch64-static``
is extracted into the cache.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from hack import gobuild, sandbox
from hack.image import debian

__all__ = ["EMULATOR", "LOCK_FILE", "emulator", "lock"]

LOCK_FILE = Path(__file__).resolve().parent / "qemu.lock"
LOCK_COMMAND = "python -m hack.image lock-emulator"
PACKAGE = "qemu-user-static"
EMULATOR = "usr/bin/qemu-aarch64-static"
REFRESH = f"refresh the lock with `{LOCK_COMMAND}` and commit hack/image/qemu.lock"


def lock() -> list[debian.Package]:
    """Pin apt's current candidate of qemu-user-static for the build machine."""
    packages = debian.locate((PACKAGE,))
    header = [
        f"# The emulator of the arm64 image's proof ({LOCK_COMMAND} writes this; commit it).",
        "# package version arch sha256 size url",
    ]
    LOCK_FILE.write_text("\n".join([*header, *(p.line() for p in packages)]) + "\n")
    return packages


def emulator() -> Path:
    """``qemu-aarch64-static`` from the pinned .deb, extracted into the cache once."""
    (package,) = debian.read_lock(LOCK_FILE)
    directory = gobuild.cache_root() / "image" / f"qemu-{package.sha256[:12]}"
    binary = directory / Path(EMULATOR).name
    if binary.is_file():
        return binary
    if sandbox.inside():
        raise RuntimeError(
            f"no {binary} and the sandbox has no network: run `make image` first (outside it)"
        )
    (deb,) = debian.fetch([package], refresh=REFRESH)
    debian.progress(f"extracting {Path(EMULATOR).name} from {deb.name}")
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=directory) as scratch:
        subprocess.run(["dpkg-deb", "--extract", str(deb), scratch], check=True)
        extracted = Path(scratch) / EMULATOR
        partial = binary.with_suffix(".partial")
        shutil.copyfile(extracted, partial)
        partial.chmod(0o755)
        partial.rename(binary)
    return binary
