"""The TypeScript and Go SDKs of our package, and what their consumers need.

``pulumi package gen-sdk`` cannot write them here (see ``gomod/pulumi-gen-sdk/main.go``),
so :func:`generate` runs our ``pulumi-gen-sdk``, built with the engine, on
``components/schema.json``. Nothing generated is committed: the SDKs follow the schema.

The consumers (``examples/typescript-quickstart``, ``examples/go-quickstart``) need
registry packages: npm packages from the example's package-lock.json, installed once into
a cache directory keyed by that lockfile, and the Go modules of the example's go.sum, in
the shared module cache. :func:`fetch_consumer_dependencies` gets both (``make sdk-deps``,
before the sandbox); inside it, :func:`node_modules` and :func:`offline_go_env` only find
them, or fail naming that target.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Final

from hack import gobuild, sandbox
from hack.pulumi.build import ensure_built

REPO_ROOT: Final = Path(__file__).resolve().parents[2]
SCHEMA: Final = REPO_ROOT / "components" / "schema.json"
TYPESCRIPT_EXAMPLE: Final = REPO_ROOT / "examples" / "typescript-quickstart"
GO_EXAMPLE: Final = REPO_ROOT / "examples" / "go-quickstart"
LANGUAGES: Final = ("nodejs", "go")
MAKE_TARGET: Final = "sdk-deps"

NPM_LOCK_FILES: Final = ("package.json", "package-lock.json")
"""What decides the cached node_modules (their digest names its directory)."""


def _language_settings(language: str) -> dict[str, str]:
    settings: dict[str, str] = json.loads(SCHEMA.read_text())["language"][language]
    return settings


def npm_package_name() -> str:
    """The generated TypeScript SDK's npm name (the schema's language.nodejs.packageName)."""
    return _language_settings("nodejs")["packageName"]


def go_module_path() -> str:
    """The generated Go SDK's module: the parent of the schema's importBasePath."""
    return os.path.dirname(_language_settings("go")["importBasePath"])


def generate(language: str, out: Path) -> None:
    """Write the ``language`` SDK of components/schema.json into ``out`` (new or empty).

    Go: ``out`` is the module root (go.mod) with the package ``ray/`` below it. Node.js:
    the TypeScript sources with their package.json and tsconfig.json (see
    :func:`compile_typescript_sdk`).
    """
    if language not in LANGUAGES:
        raise ValueError(f"language {language!r}: one of {', '.join(LANGUAGES)}")
    tool = ensure_built().path("pulumi-gen-sdk")
    result = subprocess.run(
        [str(tool), "-language", language, "-out", str(out), str(SCHEMA)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if result.returncode != 0:
        raise RuntimeError(f"pulumi-gen-sdk -language {language} failed:\n{result.stderr}")


def _npm_cache_dir() -> Path:
    digest = hashlib.sha256()
    for name in NPM_LOCK_FILES:
        digest.update((TYPESCRIPT_EXAMPLE / name).read_bytes())
    return gobuild.cache_root() / "npm" / f"typescript-quickstart-{digest.hexdigest()[:10]}"


def node_modules() -> Path:
    """The installed npm packages of the TypeScript example (fails if not installed)."""
    installed = _npm_cache_dir() / "node_modules"
    if not (_npm_cache_dir() / ".installed").is_file():
        raise RuntimeError(
            f"the TypeScript example's npm packages are not installed under {installed}: "
            f"run `make {MAKE_TARGET}` first (outside the sandbox)"
        )
    return installed


def _install_node_modules() -> Path:
    """``npm ci`` the example's lockfile into the cache, once per lockfile."""
    target = _npm_cache_dir()
    if (target / ".installed").is_file():
        return target / "node_modules"
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".installing-", dir=target.parent))
    try:
        for name in NPM_LOCK_FILES:
            shutil.copyfile(TYPESCRIPT_EXAMPLE / name, staging / name)
        # --ignore-scripts: no package here needs an install script, and none may fetch
        # anything besides what the lockfile pins. The engine warning (@pulumi/pulumi asks
        # for Node >= 22) does not stop tsc; running the program is another matter.
        subprocess.run(
            ["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=staging,
            check=True,
            timeout=600,
        )
        (staging / ".installed").touch()
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target / "node_modules"


def tsc(project: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    """Run the example's pinned TypeScript compiler on ``project`` (a tsconfig.json's folder)."""
    compiler = node_modules() / "typescript" / "bin" / "tsc"
    return subprocess.run(
        ["node", str(compiler), "-p", str(project), *arguments],
        capture_output=True,
        text=True,
        timeout=300,
    )


def compile_typescript_sdk(sdk: Path) -> Path:
    """Compile a generated TypeScript SDK into the npm package it publishes: ``sdk/bin``.

    The generator writes sources and a ``build: tsc`` script; upstream's release copies
    package.json beside the output. The SDK's own imports (@pulumi/pulumi, @types/node)
    come from the example's cached packages, linked as ``sdk/node_modules``.
    """
    (sdk / "node_modules").symlink_to(node_modules(), target_is_directory=True)
    result = tsc(sdk)
    if result.returncode != 0:
        raise RuntimeError(f"tsc of the generated SDK failed:\n{result.stdout}{result.stderr}")
    package = sdk / "bin"
    for name in ("package.json", "README.md"):
        shutil.copyfile(sdk / name, package / name)
    return package


def link_node_modules(project: Path, sdk_package: Path) -> None:
    """Give ``project`` a node_modules: the cached packages plus our SDK under its npm name.

    Each entry is a symlink, so nothing is copied and the cache stays read-only; tsc and
    Node resolve symlinks to their targets, so the SDK and the program see one
    @pulumi/pulumi.
    """
    directory = project / "node_modules"
    directory.mkdir()
    for entry in node_modules().iterdir():
        if not entry.name.startswith("."):
            (directory / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    scope, name = npm_package_name().split("/")
    (directory / scope).mkdir()
    (directory / scope / name).symlink_to(sdk_package, target_is_directory=True)


def offline_go_variables(base: dict[str, str] | None = None) -> dict[str, str]:
    """The variables that make ``go`` build a consumer from the module cache alone (what
    they change in ``base``, default this process's environment): for our own builds and
    for the Go language host, which runs ``go build`` with the engine's environment.

    GOPROXY=off: every module must already be in the cache; -mod=mod lets go add the
    generated SDK (a local replace) to a scratch copy's go.mod without asking anyone;
    -trimpath keeps the directory the SDK was generated in out of its compiled package's
    cache key, so the language host's build of a consumer finds the SDK that ``make
    sdk-deps`` compiled (``go_build``) instead of compiling it again (8 CPU-s a build).
    """
    environment = os.environ if base is None else base
    flags = [
        f
        for f in environment.get("GOFLAGS", "").split()
        if not f.startswith("-mod=") and f != "-trimpath"
    ]
    return {
        "CGO_ENABLED": "0",
        "GOFLAGS": " ".join([*flags, "-mod=mod", "-trimpath"]),
        "GOPROXY": "off",
        "GOTOOLCHAIN": "local",
    }


def offline_go_env() -> dict[str, str]:
    """This process's environment with :func:`offline_go_variables`."""
    return {**os.environ, **offline_go_variables()}


def use_go_sdk(program: Path, sdk: Path) -> None:
    """Point the go.mod of ``program`` (a copy of the Go example) at the SDK in ``sdk``."""
    subprocess.run(
        [gobuild.go(), "mod", "edit", f"-replace={go_module_path()}={sdk}"],
        cwd=program,
        check=True,
        env=offline_go_env(),
    )


def copy_go_example(target: Path, sdk: Path) -> Path:
    """A copy of the Go example whose go.mod replaces the SDK module with ``sdk``."""
    shutil.copytree(GO_EXAMPLE, target)
    use_go_sdk(target, sdk)
    return target


def go_build(
    program: Path, *packages: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``go build`` ``packages`` in the module at ``program`` (offline unless ``env``).

    -trimpath keeps the compiled packages' cache keys free of the (temporary) directory
    the SDK was generated in, so a warm build of the SDK is a cache hit; the link of
    the program into /dev/null is what a warm build costs.
    """
    return subprocess.run(
        [gobuild.go(), "build", "-trimpath", "-o", os.devnull, *packages],
        cwd=program,
        env=offline_go_env() if env is None else env,
        capture_output=True,
        text=True,
        timeout=1800,
    )


def _go_build_stamp() -> Path:
    """Marks a build of the Go example and SDK into the build cache, by what decides the
    compiled packages: the schema, the example, the generator and the Go toolchain."""
    digest = hashlib.sha256(SCHEMA.read_bytes())
    for name in ("go.mod", "go.sum", "main.go"):
        digest.update((GO_EXAMPLE / name).read_bytes())
    digest.update(str(ensure_built().path("pulumi-gen-sdk")).encode())
    version = subprocess.run(
        [gobuild.go(), "version"], capture_output=True, text=True, check=True, timeout=60
    )
    digest.update(version.stdout.encode())
    return gobuild.cache_root() / "go-consumer-builds" / digest.hexdigest()[:16]


def _download_go_modules() -> None:
    """Fill the module cache with what the Go example and the generated SDK build from,
    and the build cache with their compiled packages (a cold build is minutes; the test
    in the sandbox then compiles only the program's own package and links). The modules
    are checked every time (a moment, when present); the build only when its inputs
    changed (``_go_build_stamp``: it takes some 7 s even when every package is cached,
    for the program's main package is new in each new directory). Should Go trim the
    cached packages later, the test compiles the SDK itself: slower, still offline."""
    stamp = _go_build_stamp()
    with tempfile.TemporaryDirectory(prefix="pulumi-ray-go-sdk-") as scratch:
        sdk = Path(scratch) / "sdk"
        generate("go", sdk)
        program = copy_go_example(Path(scratch) / "program", sdk)
        online = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-mod=readonly"}
        subprocess.run(
            [gobuild.go(), "mod", "download"], cwd=program, check=True, env=online, timeout=900
        )
        if stamp.is_file():
            return
        result = go_build(program, f"{go_module_path()}/...", ".", env=online)
        if result.returncode != 0:
            raise RuntimeError(f"go build of the Go example failed:\n{result.stderr}")
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.touch()


def fetch_consumer_dependencies() -> None:
    """What the SDK tests need from the registries: npm packages and Go modules."""
    if sandbox.inside():
        raise RuntimeError(f"`make {MAKE_TARGET}` needs the registries: run it outside the sandbox")
    gobuild.progress("sdk", f"npm packages of {TYPESCRIPT_EXAMPLE.name} ...")
    print(_install_node_modules())
    gobuild.progress("sdk", f"Go modules of {GO_EXAMPLE.name} ...")
    _download_go_modules()
