"""Assemble the operator image from the cached inputs: locked .debs, pinned wheels, and
this checkout's ``operator_runtime``.

Three layers, largest and least often changed first, so that an operator change pushes
only the last one: the Debian base, the Python dependencies, the operator. Bytecode is
compiled here, by the image's own interpreter (through its own loader and libraries) with
unchecked-hash pycs and a fixed hash seed, since the pod's root filesystem is read-only.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
import tomllib
from datetime import UTC, datetime
from pathlib import Path

from components.operator.deployment import OPERATOR_COMMAND
from hack import gobuild, sandbox
from hack.image import BUILD_FACTS, LAYOUT_DIR, REPO_ROOT, ImageBuild, debian
from hack.image.layers import write_layer

FAMILY = "image"
GOMOD_DIR = Path(__file__).resolve().parent / "gomod"
RECIPE_REVISION = 1
SITE_DIR = "usr/lib/python3/dist-packages"
"""On Debian's python3.11 path (its site.py adds it); pip's --target and our package go here."""
PYTHON = "usr/bin/python3.11"
LOADER = "lib64/ld-linux-x86-64.so.2"
LIBRARY_PATH = ("lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu")
GLIBC_MINOR = 36
"""bookworm's glibc is 2.36: a wheel for any manylinux up to it runs."""
WHEEL_PLATFORMS = (
    *(f"manylinux_2_{minor}_x86_64" for minor in range(GLIBC_MINOR, 16, -1)),
    "manylinux2014_x86_64",
)
"""pip does not widen a --platform to older glibcs itself, so every tag is named."""
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
USER = "65532:65532"
"""Numeric, so the kubelet can check runAsNonRoot without reading /etc/passwd."""
WORKDIR = "/home/nonroot"


def progress(message: str) -> None:
    gobuild.progress(FAMILY, message)


# --- the Go tool ------------------------------------------------------------------------


def _ocitool_built() -> gobuild.Built:
    main_go = (GOMOD_DIR / "main.go").read_text()
    digest = gobuild.wrapper_digest(
        GOMOD_DIR.parent, ["gomod"], f"recipe {RECIPE_REVISION}", main_go
    )
    return gobuild.Built(
        root=gobuild.cache_root() / FAMILY / f"ocitool-{digest}", binaries=("ocitool",)
    )


def ocitool() -> Path:
    """The ocitool binary (gomod/main.go), built once from the pinned wrapper module."""

    def build(bin_dir: Path) -> None:
        gobuild.run_go(
            FAMILY,
            "go build ocitool (go-containerregistry)",
            ["build", "-trimpath", "-ldflags", "-s -w", "-o", str(bin_dir / "ocitool"), "."],
            GOMOD_DIR,
        )

    built = gobuild.ensure(
        _ocitool_built(),
        family=FAMILY,
        build=build,
        versions_text="github.com/google/go-containerregistry (hack/image/gomod/go.mod)\n",
        make_target="image",
        expected="a minute or two",
    )
    return built.path("ocitool")


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


def _pip_target_flags() -> list[str]:
    return [
        "--only-binary=:all:",
        *(f"--platform={platform}" for platform in WHEEL_PLATFORMS),
        "--python-version", "3.11",
        "--implementation", "cp",
        "--abi", "cp311",
        "--constraint", str(CONSTRAINTS),
        "--disable-pip-version-check",
    ]  # fmt: skip


def wheels_dir() -> Path:
    """The cached wheels of these requirements at constraints.txt's pins."""
    key = hashlib.sha256(
        "\n".join([*requirements(), CONSTRAINTS.read_text(), *WHEEL_PLATFORMS]).encode()
    ).hexdigest()[:12]
    return gobuild.cache_root() / FAMILY / f"wheels-{key}"


def fetch_wheels() -> Path:
    directory = wheels_dir()
    if (directory / ".complete").is_file():
        return directory
    if sandbox.inside():
        raise RuntimeError(
            f"no wheels under {directory} and the sandbox has no network: run `make image` "
            "first (outside the sandbox)"
        )
    progress(f"downloading wheels into {directory}")
    directory.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys_python(), "-m", "pip", "download", "--quiet", *_pip_target_flags(),
         "--dest", str(directory), *requirements()],
        check=True,
    )  # fmt: skip
    (directory / ".complete").write_text("")
    return directory


def sys_python() -> str:
    import sys

    return sys.executable


def install_dependencies(wheels: Path, tree: Path) -> None:
    target = tree / SITE_DIR
    subprocess.run(
        [sys_python(), "-m", "pip", "install", "--quiet", "--isolated", "--no-index",
         "--no-compile", "--find-links", str(wheels), "--target", str(target), *_pip_target_flags(),
         *requirements()],
        check=True,
    )  # fmt: skip
    # Console scripts carry this machine's interpreter path; the image runs none of them.
    shutil.rmtree(target / "bin", ignore_errors=True)


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


# --- bytecode ---------------------------------------------------------------------------


def compile_bytecode(rootfs: Path, tree: Path, directory: str) -> None:
    """Compile ``tree/directory`` with the image's interpreter from ``rootfs``, recording
    the in-image paths in the pycs (tracebacks name /usr/..., not this build's temp)."""
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


# --- assembly ---------------------------------------------------------------------------


def _git(*arguments: str) -> str:
    return subprocess.run(
        ["git", *arguments], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()


def source_date() -> datetime:
    """SOURCE_DATE_EPOCH if set, else HEAD's commit time: the image's ``created``."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH") or _git("log", "-1", "--format=%ct")
    return datetime.fromtimestamp(int(epoch), tz=UTC)


def image_config() -> dict[str, object]:
    return {
        "Entrypoint": list(OPERATOR_COMMAND),
        "Env": list(ENV),
        "User": USER,
        "WorkingDir": WORKDIR,
        "Labels": {
            "org.opencontainers.image.title": "pulumi-ray operator",
            "org.opencontainers.image.description": str(_project()["description"]),
            "org.opencontainers.image.licenses": "Apache-2.0",
            "org.opencontainers.image.version": package_version(),
            "org.opencontainers.image.revision": _git("rev-parse", "HEAD"),
        },
    }


def fetch_inputs() -> None:
    """What the build downloads (outside the sandbox): .debs, wheels, the Go tool."""
    debian.fetch(debian.read_lock())
    fetch_wheels()
    ocitool()


def _entrypoint_in(rootfs: Path) -> None:
    program = OPERATOR_COMMAND[0]
    if not any((rootfs / d / program).exists() for d in ("usr/bin", "bin", "usr/local/bin")):
        raise RuntimeError(f"the entrypoint's {program!r} is not on the image's PATH")


def build(out: Path) -> ImageBuild:
    """Assemble the image from the cached inputs into ``out`` (its layout and facts)."""
    started = time.monotonic()
    debs = debian.fetch(debian.read_lock())
    wheels = fetch_wheels()
    tool = ocitool()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".image-", dir=out) as scratch_name:
        scratch = Path(scratch_name)
        base, deps, operator = scratch / "base", scratch / "deps", scratch / "operator"
        progress(f"extracting {len(debs)} Debian packages")
        debian.extract(debs, base)
        _entrypoint_in(base)
        progress("compiling the standard library")
        compile_bytecode(base, base, "usr/lib/python3.11")
        progress("installing the Python dependencies")
        install_dependencies(wheels, deps)
        compile_bytecode(base, deps, SITE_DIR)
        install_operator(operator)
        compile_bytecode(base, operator, SITE_DIR)
        progress("writing the layers")
        layer_specs = []
        unpacked = 0
        for tree, created_by in (
            (base, "Debian bookworm packages (hack/image/debian.lock)"),
            (deps, "Python dependencies minus Pulumi (constraints.txt)"),
            (operator, "operator_runtime"),
        ):
            tar = scratch / f"{tree.name}.tar"
            unpacked += write_layer(tree, tar)
            layer_specs.append({"path": str(tar), "created_by": created_by})
        spec = {
            "layers": layer_specs,
            "config": image_config(),
            "created": source_date().isoformat().replace("+00:00", "Z"),
            "os": "linux",
            "architecture": debian.ARCH,
        }
        (scratch / "spec.json").write_text(json.dumps(spec, indent=2))
        progress("assembling the OCI layout (gzip)")
        layout = out / LAYOUT_DIR
        digest = subprocess.run(
            [str(tool), "assemble", "--spec", str(scratch / "spec.json"), "--layout", str(layout)],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
    manifest = json.loads((layout / "blobs" / "sha256" / digest.split(":", 1)[1]).read_bytes())
    compressed = manifest["config"]["size"] + sum(layer["size"] for layer in manifest["layers"])
    image = ImageBuild(
        layout=layout, digest=digest, compressed_bytes=compressed, unpacked_bytes=unpacked
    )
    facts = {"digest": digest, "compressed_bytes": compressed, "unpacked_bytes": unpacked}
    (out / BUILD_FACTS).write_text(json.dumps(facts, indent=2) + "\n")
    progress(f"built in {time.monotonic() - started:.0f}s")
    return image
