"""Python in an image: where packages go, which wheels fit, bytecode and scripts.

The images run Debian's python3.11 and take third-party packages as manylinux wheels
for CPython 3.11 on their platform (x86_64; the operator's also aarch64), installed with
this machine's pip into a tree laid out like the image (``pip install --target``);
nothing is built from source. Bytecode is compiled by the amd64 image's own interpreter
(through its own loader and libraries) with unchecked-hash pycs and a fixed hash seed, so
that the same sources give the same bytes. Bytecode does not depend on the machine, so
the arm64 tree is compiled by that same amd64 interpreter, never by running the target:
``build`` checks both platforms lock the same python3.11 version, and the arm64 proof
compiles a module under emulation and compares the bytes.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from hack.image import debian
from hack.image.oci import progress
from hack.image.platform import AMD64, BUILD, Platform

SITE_DIR = "usr/lib/python3/dist-packages"
"""On Debian's python3.11 path (its site.py adds it); pip's --target goes here."""
PYTHON = "usr/bin/python3.11"
STDLIB_DIR = "usr/lib/python3.11"
LOADER = BUILD.loader
LIBRARY_PATH = (f"lib/{BUILD.triplet}", f"usr/lib/{BUILD.triplet}")
GLIBC_MINOR = 36
"""bookworm's glibc is 2.36: a wheel for any manylinux up to it runs."""


def wheel_platforms(platform: Platform = AMD64) -> tuple[str, ...]:
    """pip does not widen a --platform to older glibcs itself, so every tag is named."""
    return (
        *(f"manylinux_2_{minor}_{platform.machine}" for minor in range(GLIBC_MINOR, 16, -1)),
        f"manylinux2014_{platform.machine}",
    )


WHEEL_PLATFORMS = wheel_platforms(AMD64)
"""The amd64 images' tags (the Ray image is amd64 only)."""


def target_flags(platform: Platform = AMD64) -> list[str]:
    """pip's flags for wheels that run on the image, whatever this machine is."""
    return [
        "--only-binary=:all:",
        *(f"--platform={tag}" for tag in wheel_platforms(platform)),
        "--python-version", "3.11",
        "--implementation", "cp",
        "--abi", "cp311",
        "--disable-pip-version-check",
    ]  # fmt: skip


def compile_bytecode(rootfs: Path, tree: Path, directory: str) -> None:
    """Compile ``tree/directory`` with the interpreter of ``rootfs`` (a root filesystem
    of the build machine's platform), recording the in-image paths in the pycs
    (tracebacks name /usr/..., not this build's temp)."""
    library_path = ":".join(str(rootfs / p) for p in LIBRARY_PATH)
    loader = (rootfs / LIBRARY_PATH[0] / Path(LOADER).name).resolve()
    env = {
        "PYTHONHOME": str(rootfs / "usr"),
        # Set iteration order (frozenset constants) follows string hashes: fix the seed.
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "LANG": "C.UTF-8",
    }
    completed = subprocess.run(
        [str(loader), "--library-path", library_path, str(rootfs / PYTHON), "-S",
         "-m", "compileall", "-q", "-f", "-j", "0", "--invalidation-mode", "unchecked-hash",
         "-s", str(tree), "-p", "/", str(tree / directory)],
        env=env, capture_output=True, text=True,
    )  # fmt: skip
    if completed.returncode != 0:
        raise RuntimeError(
            f"compiling {directory} with the image's python3.11 failed:\n"
            f"{completed.stdout[-3000:]}{completed.stderr[-3000:]}"
        )


def base_tree(
    base: debian.Base, tree: Path, platform: Platform = BUILD, compiler: Path | None = None
) -> None:
    """``base``'s locked packages for ``platform`` extracted into ``tree``, the standard
    library compiled by ``compiler``'s interpreter (a base of the build machine's
    platform; ``tree`` itself by default, which must then be of that platform)."""
    if compiler is None and platform != BUILD:
        raise ValueError(f"a {platform.arch} base needs a {BUILD.arch} base to compile it")
    lock = base.lock_path(platform.arch)
    debs = debian.fetch(
        debian.read_lock(lock), refresh=base.refresh, timestamp=debian.lock_timestamp(lock)
    )
    progress(f"extracting {len(debs)} Debian packages ({platform.arch})")
    debian.extract(debs, tree, base)
    progress(f"compiling the standard library ({platform.arch})")
    compile_bytecode(compiler or tree, tree, STDLIB_DIR)


_ENTRY_POINT = re.compile(r"^\s*([\w.-]+)\s*=\s*([\w.]+)\s*:\s*([\w.]+)\s*$")


def _console_scripts(site: Path) -> dict[str, tuple[str, str]]:
    """Each console script of the distributions under ``site``: (module, callable)."""
    scripts = {}
    for entry_points in sorted(site.glob("*.dist-info/entry_points.txt")):
        section = ""
        for line in entry_points.read_text().splitlines():
            if line.strip().startswith("["):
                section = line.strip()
            elif section == "[console_scripts]" and (match := _ENTRY_POINT.match(line)):
                name, module, attribute = match.groups()
                scripts[name] = (module, attribute)
    return scripts


def install_scripts(tree: Path, bin_dir: str) -> list[str]:
    """Put the programs pip installed with the packages under ``tree/SITE_DIR`` into
    ``tree/bin_dir``; their names.

    pip writes console scripts into ``--target``'s ``bin/`` with this machine's
    interpreter in the shebang: those are written again from the entry points, for the
    image's interpreter. Other programs there (a wheel's compiled ``scripts``, such as
    py-spy's) are moved as they are. The distributions' RECORD rows for them are written
    again too (``_record_programs``)."""
    pip_bin, target = tree / SITE_DIR / "bin", tree / bin_dir
    target.mkdir(parents=True, exist_ok=True)
    scripts = _console_scripts(tree / SITE_DIR)
    programs = sorted(pip_bin.iterdir()) if pip_bin.is_dir() else []
    for program in programs:
        if program.name not in scripts:
            shutil.move(program, target / program.name)
    shutil.rmtree(pip_bin, ignore_errors=True)
    for name, (module, attribute) in scripts.items():
        head = attribute.split(".", 1)[0]
        script = target / name
        script.write_text(
            f"#!/{PYTHON}\nimport sys\nfrom {module} import {head}\nsys.exit({attribute}())\n"
        )
        script.chmod(0o755)
    _record_programs(tree / SITE_DIR, target, {p.name for p in programs})
    return sorted(p.name for p in target.iterdir())


def record_hash(data: bytes) -> str:
    """A file's hash as a wheel's RECORD writes it: ``sha256=`` and the unpadded
    URL-safe base64 of the digest."""
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _record_programs(site: Path, target: Path, programs: set[str]) -> None:
    """Each RECORD row of a program pip put in its ``bin/``: the path and hash of the
    program as the image has it. pip recorded the scripts it wrote, whose shebang named
    the build's scratch directory, so their hash (and the image's digest) changed with
    where the checkout was; and the path, relative to a directory that was pip's."""

    def as_installed(row: list[str]) -> list[str] | None:
        path = PurePosixPath(row[0])
        if not (row[0].startswith("../") and path.parent.name == "bin" and path.name in programs):
            return row
        data = (target / path.name).read_bytes()
        return [os.path.relpath(target / path.name, site), record_hash(data), str(len(data))]

    _rewrite_records(site, as_installed)


def remove_programs(site: Path) -> None:
    """Remove the programs pip put in ``site``'s ``bin/`` and their RECORD rows, for an
    image that runs none of them. Left in RECORD, a console script's row hashed a shebang
    naming this machine's interpreter, so the layer's digest changed with the checkout's
    path: a build kept from a clone at one path was not what a build at another gave."""
    shutil.rmtree(site / "bin", ignore_errors=True)

    def outside_bin(row: list[str]) -> list[str] | None:
        path = PurePosixPath(row[0])
        return None if row[0].startswith("../") and path.parent.name == "bin" else row

    _rewrite_records(site, outside_bin)


def _rewrite_records(site: Path, change: Callable[[list[str]], list[str] | None]) -> None:
    """Every RECORD under ``site`` with each row ``change``d (``None`` drops it); a
    RECORD whose rows all stay as they were is not written again."""
    for record in sorted(site.glob("*.dist-info/RECORD")):
        rows = list(csv.reader(record.read_text().splitlines()))
        changed = [new for row in rows if (new := change(list(row))) is not None]
        if changed == rows:  # most distributions install no program
            continue
        with record.open("w", newline="") as stream:
            csv.writer(stream, lineterminator="\n").writerows(changed)
