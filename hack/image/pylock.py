"""The operator image's Python packages, locked by hash: ``requirements.lock``.

The lock is written by uv (``uv pip compile --generate-hashes``), a tool made for it, from
what the image installs (``build.requirements()``: pyproject's dependencies minus Pulumi,
plus the ``operator`` extra) at constraints.txt's pins, for CPython 3.11 on manylinux
2.36 (bookworm's glibc): every pin carries the sha256 of each of its distributions on
PyPI, so one lock serves every platform. ``pip download`` and ``pip install`` both run
with ``--require-hashes``: a wheel whose bytes changed fails the build, as a .deb whose
hash changed does (``debian.fetch``).

The lock's header records a digest of its inputs; ``check()`` fails the build when
pyproject.toml's requirements or constraints.txt changed since it was written, naming the
command that writes it again.

uv runs from a virtualenv of its own under the cache, at one pinned version; the
project's virtualenv is left alone.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from hack import gobuild, sandbox
from hack.image.oci import FAMILY, progress

__all__ = ["LOCK_COMMAND", "LOCK_FILE", "UV_VERSION", "check", "inputs_digest", "lock"]

LOCK_FILE = Path(__file__).resolve().parent / "requirements.lock"
LOCK_COMMAND = "python -m hack.image lock-wheels"
UV_VERSION = "0.13.8"
INPUTS_PREFIX = "# inputs: sha256:"
PYTHON_VERSION = "3.11"
LOCK_PLATFORM = "x86_64-manylinux_2_36"
"""The resolution's platform; the hashes cover every platform's wheels of each pin, and
no requirement of the image depends on the machine (the arm64 build proves it: pip
installs the same pins from the same lock)."""


def inputs_digest(requirements: Sequence[str], constraints: str) -> str:
    """What the lock was resolved from: the image's requirements and the constraints."""
    text = "\n".join([*requirements, "--", constraints])
    return hashlib.sha256(text.encode()).hexdigest()


def _uv() -> Path:
    """uv at UV_VERSION, in a virtualenv of its own under the cache."""
    venv = gobuild.cache_root() / FAMILY / f"uv-{UV_VERSION}"
    uv = venv / "bin" / "uv"
    if uv.is_file():
        return uv
    if sandbox.inside():
        raise RuntimeError(f"no uv under {venv}; the sandbox has no network")
    progress(f"installing uv {UV_VERSION} into {venv}")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
         "--disable-pip-version-check", f"uv=={UV_VERSION}"],
        check=True,
    )  # fmt: skip
    return uv


def lock(requirements: Sequence[str], constraints: Path) -> Path:
    """Resolve ``requirements`` under ``constraints`` with hashes into LOCK_FILE."""
    scratch = LOCK_FILE.with_suffix(".in")
    scratch.write_text("\n".join(requirements) + "\n")
    try:
        compiled = subprocess.run(
            [str(_uv()), "pip", "compile", "--quiet", "--generate-hashes", "--no-header",
             "--no-annotate", "--python-version", PYTHON_VERSION,
             "--python-platform", LOCK_PLATFORM, "--only-binary", ":all:",
             "--constraint", str(constraints), str(scratch)],
            capture_output=True, text=True, check=True, cwd=LOCK_FILE.parent,
        ).stdout  # fmt: skip
    finally:
        scratch.unlink()
    header = [
        f"# The operator image's wheels ({LOCK_COMMAND} writes this with uv {UV_VERSION};",
        "# commit it). Installed with pip --require-hashes, for every platform of the image.",
        f"{INPUTS_PREFIX}{inputs_digest(requirements, constraints.read_text())}",
    ]
    LOCK_FILE.write_text("\n".join(header) + "\n" + compiled)
    return LOCK_FILE


def check(requirements: Sequence[str], constraints: Path) -> None:
    """Fail unless LOCK_FILE was resolved from exactly these inputs."""
    wanted = f"{INPUTS_PREFIX}{inputs_digest(requirements, constraints.read_text())}"
    recorded = next(
        (line for line in LOCK_FILE.read_text().splitlines() if line.startswith(INPUTS_PREFIX)),
        "(none)",
    )
    if recorded != wanted:
        raise RuntimeError(
            f"{LOCK_FILE.name} was resolved from other requirements or constraints "
            f"(it records {recorded.removeprefix('# inputs: ')}; pyproject.toml and "
            f"constraints.txt give {wanted.removeprefix('# inputs: ')}): run "
            f"`{LOCK_COMMAND}` and commit hack/image/requirements.lock"
        )
