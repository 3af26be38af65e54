"""The Ray image's Python packages: ``ray[default,serve]`` and its closure, locked.

``lock()`` resolves the closure once, with pip against the index, for the image's
platform (CPython 3.11, manylinux x86_64 wheels only) and under constraints.txt, so a
package the test environment also has is at the version the tests run; it writes
``python.lock``, one ``name==version --hash=sha256:...`` a line (pip's requirements
format). ``fetch()`` downloads exactly those files into the cache (``--no-deps``,
hashes required), outside the sandbox; the build installs from there, without an index
and without resolving: what is in the image is what the lock says.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hack import gobuild, sandbox
from hack.image.oci import FAMILY, progress
from hack.image.python import WHEEL_PLATFORMS, target_flags
from hack.image.ray import MAKE_COMMAND, RAY_VERSION

LOCK_FILE = Path(__file__).resolve().parent / "python.lock"
CONSTRAINTS = Path(__file__).resolve().parents[3] / "constraints.txt"
REQUIREMENT = f"ray[default,serve]=={RAY_VERSION}"
LOCK_COMMAND = "python -m hack.image.ray lock"
_WHEEL_NAME = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)-.*\.whl$")
_LINE = re.compile(r"^(?P<name>\S+)==(?P<version>\S+) --hash=sha256:(?P<sha256>[0-9a-f]{64})$")


@dataclass(frozen=True)
class Wheel:
    """One locked distribution."""

    name: str
    version: str
    sha256: str

    def line(self) -> str:
        return f"{self.name}=={self.version} --hash=sha256:{self.sha256}"


def _constrained_ray_version() -> str:
    for line in CONSTRAINTS.read_text().splitlines():
        if line.strip().lower().startswith("ray=="):
            return line.strip().split("==", 1)[1]
    raise RuntimeError(f"{CONSTRAINTS} pins no ray")


def check_ray_pin() -> None:
    """constraints.txt, ``RAY_VERSION`` and the lock name one Ray version."""
    pinned, locked = _constrained_ray_version(), {w.name: w for w in read_lock()}.get("ray")
    if pinned != RAY_VERSION or locked is None or locked.version != RAY_VERSION:
        raise RuntimeError(
            f"constraints.txt pins ray {pinned}, hack/image/ray says {RAY_VERSION} and "
            f"python.lock {locked.version if locked else 'none'}: set RAY_VERSION in "
            f"hack/image/ray/__init__.py and run `{LOCK_COMMAND}`"
        )


def read_lock(path: Path = LOCK_FILE) -> list[Wheel]:
    wheels = []
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        match = _LINE.match(line.strip())
        if match is None:
            raise RuntimeError(f"{path}: not a locked wheel: {line!r}")
        wheels.append(Wheel(match["name"], match["version"], match["sha256"]))
    return wheels


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def lock(path: Path = LOCK_FILE) -> list[Wheel]:
    """Resolve ``REQUIREMENT`` for the image's platform and write the lock."""
    if _constrained_ray_version() != RAY_VERSION:
        raise RuntimeError(f"constraints.txt's ray pin is not {RAY_VERSION} (RAY_VERSION)")
    with tempfile.TemporaryDirectory(prefix="ray-wheels-") as scratch:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", *target_flags(),
             "--constraint", str(CONSTRAINTS), "--dest", scratch, REQUIREMENT],
            check=True,
        )  # fmt: skip
        wheels = []
        for wheel in sorted(Path(scratch).glob("*.whl")):
            match = _WHEEL_NAME.match(wheel.name)
            if match is None:
                raise RuntimeError(f"pip downloaded {wheel.name}, not a wheel's name")
            name = match["name"].lower().replace("_", "-")
            wheels.append(Wheel(name, match["version"], _sha256(wheel)))
    header = [
        f"# The Ray image's Python packages ({LOCK_COMMAND} writes this; commit it).",
        f"# {REQUIREMENT} and its closure: CPython 3.11 manylinux x86_64 wheels, resolved",
        "# under constraints.txt (a package the tests also install is at their version).",
    ]
    path.write_text("\n".join([*header, *(w.line() for w in wheels)]) + "\n")
    return wheels


def wheels_dir(lock_file: Path = LOCK_FILE) -> Path:
    """The cached wheels of a lock."""
    key = hashlib.sha256("\n".join([lock_file.read_text(), *WHEEL_PLATFORMS]).encode())
    return gobuild.cache_root() / FAMILY / f"ray-wheels-{key.hexdigest()[:12]}"


def fetch(lock_file: Path = LOCK_FILE) -> Path:
    """A lock's wheels in the cache, downloaded (hashes checked) if missing."""
    directory = wheels_dir(lock_file)
    if (directory / ".complete").is_file():
        return directory
    if sandbox.inside():
        raise RuntimeError(
            f"no Ray wheels under {directory} and the sandbox has no network: run "
            f"`{MAKE_COMMAND}` first (outside the sandbox)"
        )
    progress(f"downloading the locked Ray wheels into {directory}")
    directory.mkdir(parents=True, exist_ok=True)
    downloaded = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", *target_flags(), "--no-deps",
         "--require-hashes", "--dest", str(directory), "--requirement", str(lock_file)],
    )  # fmt: skip
    if downloaded.returncode != 0:
        raise RuntimeError(
            "pip could not download the locked Ray wheels (see above); if the index no "
            f"longer serves a locked file as locked, run `{LOCK_COMMAND}` and commit "
            f"{lock_file.relative_to(CONSTRAINTS.parent)}"
        )
    (directory / ".complete").write_text("")
    return directory


def install(wheels: Path, locked: list[Wheel], scratch: Path, target: Path) -> None:
    """Install exactly ``locked`` from ``wheels`` into ``target``: no index, no resolving."""
    requirements = scratch / f"{target.name}.requirements"
    requirements.write_text("".join(f"{w.line()}\n" for w in locked))
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--isolated", "--no-index",
         "--no-deps", "--require-hashes", "--no-compile", "--find-links", str(wheels),
         "--target", str(target), *target_flags(), "--requirement", str(requirements)],
        check=True,
    )  # fmt: skip


def unmet_requirements(ray_site: Path, deps_site: Path, extras: tuple[str, ...]) -> list[str]:
    """The requirements of the ray installed under ``ray_site`` (with ``extras``, for the
    image's CPython 3.11 on Linux) that no distribution under ``deps_site`` meets."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    installed = {
        canonicalize_name(meta.name): meta.version
        for meta in importlib.metadata.distributions(path=[str(deps_site)])
    }
    (ray,) = importlib.metadata.distributions(path=[str(ray_site)], name="ray")
    environments = [{"python_version": "3.11", "python_full_version": "3.11.2",
                     "sys_platform": "linux", "platform_system": "Linux",
                     "platform_machine": "x86_64", "extra": extra}
                    for extra in ("", *extras)]  # fmt: skip
    unmet = []
    for line in ray.requires or []:
        requirement = Requirement(line)
        marker = requirement.marker
        if marker is not None and not any(marker.evaluate(env) for env in environments):
            continue
        version = installed.get(canonicalize_name(requirement.name))
        if version is None or not requirement.specifier.contains(version, prereleases=True):
            unmet.append(f"{line} (the layer has {version or 'none'})")
    return unmet
