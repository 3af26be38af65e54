"""Build pinned Go binaries once, into a cache outside the repository, and reuse them.

No release downloads are reachable where this project is built, so every tool we run
(the control plane, kwok, the Pulumi engine, KubeRay's operator for side-by-side runs)
comes from the Go module proxy through a wrapper module whose committed go.mod/go.sum
pin it. A build lands in ``<cache>/<family>/<stamp>/`` with a ``VERSIONS`` file; the
stamp digests the versions, the wrapper modules and a recipe revision, so a pin change
builds afresh and an unchanged pin costs a few stats. A file lock lets two sessions ask
at once: one builds, the other waits and finds the result.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from hack import sandbox

LESS_GC_ENV: Final[Mapping[str, str]] = {"GOGC": "400", "GOMEMLIMIT": "1000MiB"}
"""Go's garbage collector traded for memory, for the Go programs a test session runs
where they spend much of their CPU collecting (the API server, the Pulumi engine and its
Go plugins): collect when the heap has grown fivefold instead of twofold, but before
1000 MiB. On a test machine's two cores CPU is what is short. The benchmarks keep Go's
defaults: their figures are about the programs as users run them."""
ONE_PROC_ENV: Final[Mapping[str, str]] = {"GOMAXPROCS": "1"}
"""One thread running Go code at a time, for the daemons a test session runs beside each
other on two cores (each control plane's components): with Go's default of one per core,
a mostly idle server's scheduler spins threads looking for work that another process
needed the core for. Two copies of ``tests/integration/raycluster`` (47 tests) run side
by side, twice: the control plane's components used 37.5 and 40.5 CPU-s with this against
43.4 and 46.6 without, and each copy took 284-285 s either way. The benchmarks and
``make demo`` keep Go's defaults."""
HEARTBEAT_SECONDS = 60.0
"""How often a long `go` command reports that it is still running."""


def cache_root() -> Path:
    """Where built tools live: ``$PULUMI_RAY_CACHE`` or ``~/.cache/pulumi-ray``."""
    configured = os.environ.get("PULUMI_RAY_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "pulumi-ray"


def progress(family: str, message: str) -> None:
    print(f"[{family}] {message}", file=sys.stderr, flush=True)


def wrapper_digest(gomod_dir: Path, wrappers: Iterable[str], *extra: str) -> str:
    """A short digest of wrapper modules' go.mod/go.sum and any extra text."""
    digest = hashlib.sha256("\n".join(extra).encode())
    for wrapper in sorted(wrappers):
        for file_name in ("go.mod", "go.sum"):
            digest.update((gomod_dir / wrapper / file_name).read_bytes())
    return digest.hexdigest()[:10]


@dataclass(frozen=True)
class Built:
    """The binaries of one stamp: ``root/bin/<name>`` and ``root/VERSIONS``."""

    root: Path
    binaries: tuple[str, ...]

    @property
    def bin_dir(self) -> Path:
        return self.root / "bin"

    def path(self, binary: str) -> Path:
        return self.bin_dir / binary

    @property
    def complete(self) -> bool:
        return (self.root / "VERSIONS").is_file() and all(
            self.path(binary).is_file() for binary in self.binaries
        )


def module_lines(modules: Iterable[tuple[str, str]]) -> str:
    """``MODULE VERSION`` a line each, sorted: the ``VERSIONS`` file of a build from
    several wrapper modules."""
    return "".join(f"{module} {version}\n" for module, version in sorted(modules))


def go() -> str:
    found = shutil.which("go")
    if found is None:
        raise RuntimeError(
            "this tool is built from Go modules, but no `go` is on PATH; "
            "install Go >= 1.25 and run again"
        )
    return found


def go_env(overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a go command: pure Go (CGO_ENABLED=0, static binaries that
    need no C toolchain) unless ``overrides`` says otherwise for one build (runc, whose
    namespace setup is C)."""
    # -mod=readonly: a build must never rewrite a committed go.mod/go.sum; the wrappers'
    # go.sum already holds every hash, so no checksum-database lookup happens either.
    flags = [f for f in os.environ.get("GOFLAGS", "").split() if not f.startswith("-mod=")]
    return {
        **os.environ,
        "CGO_ENABLED": "0",
        "GOFLAGS": " ".join([*flags, "-mod=readonly"]),
        **(overrides or {}),
    }


def run_go(
    family: str,
    what: str,
    arguments: list[str],
    cwd: Path,
    env: Mapping[str, str] | None = None,
) -> None:
    """Run one long go command, reporting progress while it runs; fail with its name.
    ``env`` overrides ``go_env()``'s variables for this command."""
    progress(family, f"{what} ...")
    started = time.monotonic()
    with subprocess.Popen([go(), *arguments], cwd=cwd, env=go_env(env)) as process:
        while True:
            try:
                process.wait(timeout=HEARTBEAT_SECONDS)
                break
            except subprocess.TimeoutExpired:
                progress(family, f"  still running: {what} ({time.monotonic() - started:.0f}s)")
    if process.returncode != 0:
        raise RuntimeError(
            f"{what} failed (exit {process.returncode}) in {cwd}; see the go output above"
        )
    progress(family, f"  done in {time.monotonic() - started:.0f}s")


def module_dir(module: str, version: str, wrapper: Path) -> Path:
    """Where the Go module cache unpacked ``module@version`` (downloading it, verified
    against the ``wrapper`` module's go.sum, if need be): the files a build copies from
    a module besides its binaries (CRDs, manifests)."""
    found = subprocess.run(
        [go(), "mod", "download", "-json", f"{module}@{version}"],
        cwd=wrapper, env=go_env(), capture_output=True, text=True,
    )  # fmt: skip
    if found.returncode != 0:
        raise RuntimeError(f"go mod download {module}@{version} failed: {found.stderr.strip()}")
    return Path(json.loads(found.stdout)["Dir"])


@contextlib.contextmanager
def _lock(directory: Path) -> Iterator[None]:
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / ".build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def ensure(
    built: Built,
    *,
    family: str,
    build: Callable[[Path], None],
    versions_text: str,
    make_target: str,
    force: bool = False,
    expected: str = "several minutes",
) -> Built:
    """Run ``build(bin_dir)`` into a staging directory unless ``built`` is complete.

    The staging directory is renamed into place only when every step succeeded, so an
    interrupted build is never mistaken for a finished one. In the sandbox, which has no
    network, a missing build fails at once naming the ``make_target`` that builds it.
    """
    if built.complete and not force:
        return built
    if sandbox.inside():
        raise RuntimeError(
            f"{family} is not built under {built.root.parent} and the sandbox has no network "
            f"to fetch Go modules: run `make {make_target}` first (outside the sandbox)"
        )
    with _lock(built.root.parent):
        if built.complete and not force:
            return built
        staging = Path(tempfile.mkdtemp(prefix=".building-", dir=built.root.parent))
        started = time.monotonic()
        progress(family, f"building into {built.root} (first time: {expected})")
        try:
            (staging / "bin").mkdir()
            build(staging / "bin")
            (staging / "VERSIONS").write_text(versions_text)
            shutil.rmtree(built.root, ignore_errors=True)
            staging.rename(built.root)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        progress(family, f"built in {time.monotonic() - started:.0f}s")
    return built


def build_command(prog: str, description: str, build: Callable[[bool], Built]) -> int:
    """The ``python -m hack.<tool> build [--force]`` command of a tool built here: the
    ``make`` targets call it before the sandboxed tests, which have no network. Prints
    the binaries' directory."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("command", choices=("build",))
    parser.add_argument("--force", action="store_true", help="rebuild even if cached")
    arguments = parser.parse_args()
    print(build(arguments.force).bin_dir)
    return 0
