"""Assemble the operator image from the cached inputs: locked .debs, pinned wheels, and
this checkout's ``operator_runtime``, for each platform (``platform.PLATFORMS``).

Three layers per platform, largest and least often changed first, so that an operator
change pushes only the last one: the Debian base, the Python dependencies, the operator.
Every module has its bytecode (``python.compile_bytecode``), since the pod's root
filesystem is read-only; the build machine's base compiles every platform's, which is why
``_same_interpreter`` holds the platforms' locks to one python3.11 version.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from components.operator.deployment import OPERATOR_COMMAND
from hack import gobuild, sandbox
from hack.image import BUILD_FACTS, LAYOUT_DIR, REPO_ROOT, ImageBuild, debian, pylock, reuse, sbom
from hack.image.oci import (
    FAMILY,
    Layer,
    PlatformLayers,
    assemble_index,
    building,
    git,
    progress,
    source_date,
)
from hack.image.oci import ocitool as ocitool  # where the node's images (hack/node) take it
from hack.image.platform import BUILD, PLATFORMS, Platform
from hack.image.python import (
    SITE_DIR,
    base_tree,
    compile_bytecode,
    remove_programs,
    target_flags,
    wheel_platforms,
)

PYPROJECT = REPO_ROOT / "pyproject.toml"
CONSTRAINTS = REPO_ROOT / "constraints.txt"
PACKAGE = "operator_runtime"
DIST_NAME = "pulumi-ray"
ENV = (
    "PATH=/usr/local/bin:/usr/bin:/bin",
    "LANG=C.UTF-8",
    "PYTHONUNBUFFERED=1",
    "PYTHONDONTWRITEBYTECODE=1",
    # No openssl package, so no /usr/lib/ssl: Python's ssl finds the bundle through this.
    f"SSL_CERT_FILE=/{debian.CA_BUNDLE}",
)
USER = debian.OPERATOR.user
WORKDIR = f"/{USER.home}"


# --- Python dependencies ----------------------------------------------------------------


def _project() -> dict[str, object]:
    project: dict[str, object] = tomllib.loads(PYPROJECT.read_text())["project"]
    return project


def requirements() -> list[str]:
    """What the operator needs (DESIGN.md §2): the base dependencies minus Pulumi's (the
    API layer's pydantic, PyYAML, croniter) and the ``operator`` extra (the Kubernetes
    client, httpx, prometheus-client, ...)."""
    project = _project()
    base, extras = project["dependencies"], project["optional-dependencies"]
    assert isinstance(base, list) and isinstance(extras, dict)
    operator = extras["operator"]
    assert isinstance(operator, list)
    return [str(d) for d in [*base, *operator] if not str(d).lower().startswith("pulumi")]


def package_version() -> str:
    return str(_project()["version"])


def _pip_target_flags(platform: Platform) -> list[str]:
    """pip's flags for ``platform``'s wheels, exactly as requirements.lock pins them."""
    return [*target_flags(platform), "--require-hashes", "--requirement", str(pylock.LOCK_FILE)]


def wheels_dir(platform: Platform) -> Path:
    """The cached wheels of requirements.lock for ``platform``."""
    key = hashlib.sha256(
        "\n".join([pylock.LOCK_FILE.read_text(), *wheel_platforms(platform)]).encode()
    ).hexdigest()[:12]
    return gobuild.cache_root() / FAMILY / f"wheels-{key}"


def fetch_wheels(platform: Platform) -> Path:
    pylock.check(requirements(), CONSTRAINTS)
    directory = wheels_dir(platform)
    if (directory / ".complete").is_file():
        return directory
    if sandbox.inside():
        raise RuntimeError(
            f"no wheels under {directory} and the sandbox has no network: run `make image` "
            "first (outside the sandbox)"
        )
    progress(f"downloading {platform.arch} wheels into {directory}")
    directory.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", *_pip_target_flags(platform),
         "--dest", str(directory)],
        check=True,
    )  # fmt: skip
    (directory / ".complete").write_text("")
    return directory


def install_dependencies(wheels: Path, tree: Path, platform: Platform) -> None:
    target = tree / SITE_DIR
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--isolated", "--no-index",
         "--no-compile", "--find-links", str(wheels), "--target", str(target),
         *_pip_target_flags(platform)],
        check=True,
    )  # fmt: skip
    remove_programs(target)


# --- the operator -----------------------------------------------------------------------


def _package_files() -> list[Path]:
    """operator_runtime's modules and its package data, as pyproject.toml declares it."""
    source = REPO_ROOT / PACKAGE
    setuptools = tomllib.loads(PYPROJECT.read_text())["tool"]["setuptools"]
    patterns = ["**/*.py", *setuptools["package-data"][PACKAGE]]
    files = {p for pattern in patterns for p in source.glob(pattern) if p.is_file()}
    return sorted(p for p in files if "__pycache__" not in p.parts)


def install_operator(tree: Path) -> None:
    """operator_runtime and a dist-info, so importlib.metadata finds the version.

    Copied, not built as a wheel: the project's wheel also holds ``components`` (which
    needs Pulumi), and building one needs setuptools in the sandbox."""
    site = tree / SITE_DIR
    for path in _package_files():
        target = site / path.relative_to(REPO_ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    project = _project()
    dist_info = site / f"{DIST_NAME.replace('-', '_')}-{package_version()}.dist-info"
    dist_info.mkdir()
    metadata = [
        "Metadata-Version: 2.1",
        f"Name: {DIST_NAME}",
        f"Version: {package_version()}",
        f"Summary: {project['description']}",
        f"Requires-Python: {project['requires-python']}",
        *(f"Requires-Dist: {r}" for r in requirements()),
    ]
    (dist_info / "METADATA").write_text("\n".join(metadata) + "\n")
    (dist_info / "top_level.txt").write_text(PACKAGE + "\n")


# --- assembly ---------------------------------------------------------------------------


def image_config() -> dict[str, object]:
    return {
        "Entrypoint": list(OPERATOR_COMMAND),
        "Env": list(ENV),
        "User": USER.config,
        "WorkingDir": WORKDIR,
        "Labels": {
            "org.opencontainers.image.title": "pulumi-ray operator",
            "org.opencontainers.image.description": str(_project()["description"]),
            "org.opencontainers.image.licenses": "Apache-2.0",
            "org.opencontainers.image.version": package_version(),
            "org.opencontainers.image.revision": git("rev-parse", "HEAD"),
        },
    }


def fetch_inputs() -> None:
    """What the build downloads (outside the sandbox): .debs, wheels, the Go tool."""
    for platform in PLATFORMS:
        debian.fetch(debian.read_lock(debian.OPERATOR.lock_path(platform.arch)))
        fetch_wheels(platform)
    ocitool()


INTERPRETER_PACKAGES = ("python3.11-minimal", "libpython3.11-minimal", "libpython3.11-stdlib")


def _same_interpreter() -> None:
    """Every platform's lock holds the python3.11 the build machine's compiles with: the
    bytecode it writes is then the bytecode each platform's own interpreter would."""
    versions = {
        platform.arch: {
            p.name: p.version
            for p in debian.read_lock(debian.OPERATOR.lock_path(platform.arch))
            if p.name in INTERPRETER_PACKAGES
        }
        for platform in PLATFORMS
    }
    if len({tuple(sorted(v.items())) for v in versions.values()}) != 1:
        raise RuntimeError(
            f"the platforms' locks hold different Python packages ({versions}): lock them "
            f"again together with `{debian.OPERATOR.lock_command}`"
        )


def _entrypoint_in(rootfs: Path) -> None:
    program = OPERATOR_COMMAND[0]
    if not any((rootfs / d / program).exists() for d in ("usr/bin", "bin", "usr/local/bin")):
        raise RuntimeError(f"the entrypoint's {program!r} is not on the image's PATH")


IMAGE_NAME = "pulumi-ray-operator"


def sbom_path(out: Path, platform: Platform) -> Path:
    """Where a build writes ``platform``'s SBOM: beside the layout."""
    return out / f"sbom-{platform.arch}.spdx.json"


def _platform_layers(
    platform: Platform, scratch: Path, compiler: Path | None, out: Path, kept_trees: bool
) -> PlatformLayers:
    """``platform``'s three layers under ``scratch/<arch>`` and its SBOM beside the
    layout; ``compiler`` is the build machine's base, None for that platform itself (built
    first, its base compiles itself). ``kept_trees``: the base and dependency trees come
    from the build cache (``_trees``)."""
    wheels = fetch_wheels(platform)
    root = scratch / platform.arch
    root.mkdir()
    base, deps = _trees(platform, root, compiler, wheels, kept_trees)
    operator = root / "operator"
    install_operator(operator)
    compile_bytecode(compiler or base, operator, SITE_DIR)
    lock_name = debian.OPERATOR.lock_path(platform.arch).name
    layers = (
        Layer(base, f"Debian bookworm packages (hack/image/{lock_name})"),
        Layer(deps, "Python dependencies minus Pulumi (hack/image/requirements.lock)"),
        Layer(operator, "operator_runtime"),
    )
    document = sbom.document(
        arch=platform.arch, image_name=IMAGE_NAME, version=package_version(),
        created=source_date(),
        debian=debian.read_lock(debian.OPERATOR.lock_path(platform.arch)),
        python=[*sbom.python_distributions(deps / SITE_DIR, wheels),
                *sbom.python_distributions(operator / SITE_DIR, None)],
    )  # fmt: skip
    sbom_file = sbom_path(out, platform)
    sbom_file.write_bytes(document)
    return PlatformLayers(platform, layers, sbom_file)


KEPT = (LAYOUT_DIR, BUILD_FACTS, *(sbom_path(Path(), p).name for p in PLATFORMS))
"""What a build leaves in its dist directory that the build cache keeps (``reuse.py``)."""


def recipe_facts() -> list[str]:
    """What the image is made of besides ``hack/image`` (which ``reuse.recipe_key`` reads
    itself): ``operator_runtime``'s files as the image gets them, the project's metadata
    and pins, the command it runs, and the commit it is labelled with and dated by."""
    sources = [*_package_files(), PYPROJECT, CONSTRAINTS]
    return [
        *(f"{path.relative_to(REPO_ROOT)} {hashlib.sha256(path.read_bytes()).hexdigest()}"
          for path in sources),
        " ".join(OPERATOR_COMMAND),
        git("rev-parse", "HEAD"),
        source_date().isoformat(),
    ]  # fmt: skip


def _trees(
    platform: Platform, root: Path, compiler: Path | None, wheels: Path, kept_trees: bool
) -> tuple[Path, Path]:
    """``platform``'s Debian base and its Python dependencies, bytecode compiled: made
    under ``root``, or with ``kept_trees`` taken from the build cache, made there first if
    missing. Neither holds anything of the operator's, so a new commit needs neither
    made again: of a clean clone's 20 to 32 s `make image`, they were 16 to 24. Each is
    keyed by everything it is made from: ``hack/image`` (its locks included), the
    platform, and the pip that installs the wheels. The image tests' rebuild makes them
    afresh, and its digest must equal the one made from the kept trees."""

    def make_base(tree: Path) -> None:
        base_tree(debian.OPERATOR, tree, platform, compiler)
        _entrypoint_in(tree)

    def make_deps(tree: Path) -> None:
        progress(f"installing the Python dependencies ({platform.arch})")
        install_dependencies(wheels, tree, platform)
        compile_bytecode(compiler or base, tree, SITE_DIR)

    if not kept_trees:
        base, deps = root / "base", root / "deps"
        make_base(base)
        make_deps(deps)
        return base, deps
    pip = importlib.metadata.version("pip")
    key = reuse.recipe_key(platform.arch, f"pip {pip}", f"python {sys.version}")
    base = reuse.kept_tree(f"operator-base-{platform.arch}", key, make_base)
    return base, reuse.kept_tree(f"operator-deps-{platform.arch}", key, make_deps)


def build(out: Path, *, kept_trees: bool = False) -> ImageBuild:
    """Assemble the image from the cached inputs into ``out`` (its layout and facts);
    ``kept_trees``: the base and dependency layers' trees from the build cache
    (``_trees``), as ``make image`` does."""
    _same_interpreter()
    with building(out) as scratch:
        ordered = sorted(PLATFORMS, key=lambda p: p != BUILD)
        compiler: Path | None = None  # the build machine's base, once it is made
        built: dict[Platform, PlatformLayers] = {}
        for platform in ordered:
            built[platform] = _platform_layers(platform, scratch, compiler, out, kept_trees)
            compiler = compiler or built[platform].layers[0].tree
        images = [built[p] for p in PLATFORMS]
        return assemble_index(out, images, image_config(), USER, scratch, source_date())
