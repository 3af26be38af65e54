"""Build the control-plane binaries from their Go modules, once, into a cache outside the repo.

No release downloads are reachable where this project is built, so every binary comes
from the Go module proxy through a wrapper module (``gomod/<name>``) whose go.sum pins
it. The result lands in ``<cache>/localcluster/<stamp>/bin``; the stamp covers the
versions and the wrapper modules' go.sum, so a pin change builds afresh and an unchanged
pin reuses the binaries (a warm run costs one stat). The Go build cache is shared, so a
rebuild after a pin change only recompiles what changed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from hack.localcluster import versions

GOMOD_DIR = Path(__file__).resolve().parent / "gomod"

BINARIES = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubectl",
    "kwok",
)


def cache_root() -> Path:
    """Where built tools live: ``$PULUMI_RAY_CACHE`` or ``~/.cache/pulumi-ray``."""
    configured = os.environ.get("PULUMI_RAY_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "pulumi-ray"


def _stamp() -> str:
    digest = hashlib.sha256()
    for name in sorted(versions.WRAPPER_MODULES):
        module, version = versions.WRAPPER_MODULES[name]
        digest.update(f"{name} {module} {version}\n".encode())
        digest.update((GOMOD_DIR / name / "go.sum").read_bytes())
    return (
        f"k8s-{versions.KUBERNETES}-etcd-{versions.ETCD}-kwok-{versions.KWOK}"
        f"-{digest.hexdigest()[:10]}"
    )


@dataclass(frozen=True)
class Toolset:
    """The built binaries of one stamp."""

    bin_dir: Path

    def path(self, binary: str) -> Path:
        return self.bin_dir / binary

    @property
    def complete(self) -> bool:
        return (self.bin_dir.parent / "VERSIONS").is_file() and all(
            self.path(binary).is_file() for binary in BINARIES
        )


def toolset() -> Toolset:
    """The toolset for the current pins, built or not."""
    return Toolset(bin_dir=cache_root() / "localcluster" / _stamp() / "bin")


def _kubernetes_ldflags() -> str:
    major, minor = versions.KUBERNETES.lstrip("v").split(".")[:2]
    flags = ["-s", "-w"]
    # Both packages carry a version: component-base for the servers, client-go for kubectl.
    for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [
            f"-X {package}.gitVersion={versions.KUBERNETES}",
            f"-X {package}.gitMajor={major}",
            f"-X {package}.gitMinor={minor}",
            f"-X {package}.gitTreeState=clean",
            f"-X {package}.buildDate=1970-01-01T00:00:00Z",
        ]
    return " ".join(flags)


def _go_builds(out_dir: Path) -> list[tuple[str, str, list[str]]]:
    """(what, wrapper module, go build arguments) for each build step."""
    kubernetes_commands = [
        f"k8s.io/kubernetes/cmd/{name}"
        for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")
    ]
    kwok_ldflags = f"-s -w -X sigs.k8s.io/kwok/pkg/consts.Version={versions.KWOK}"
    return [
        (
            f"etcd {versions.ETCD}",
            "etcd",
            ["-ldflags", "-s -w", "-o", str(out_dir / "etcd"), "go.etcd.io/etcd/server/v3"],
        ),
        (
            f"kwok {versions.KWOK}",
            "kwok",
            ["-ldflags", kwok_ldflags, "-o", str(out_dir / "kwok"), "sigs.k8s.io/kwok/cmd/kwok"],
        ),
        (
            f"kube-apiserver, kube-controller-manager, kube-scheduler, kubectl "
            f"{versions.KUBERNETES}",
            "kubernetes",
            ["-ldflags", _kubernetes_ldflags(), "-o", f"{out_dir}/", *kubernetes_commands],
        ),
    ]


def _progress(message: str) -> None:
    print(f"[localcluster] {message}", file=sys.stderr, flush=True)


def ensure_built(*, force: bool = False) -> Toolset:
    """Build the binaries unless the cache already holds this stamp; return them."""
    tools = toolset()
    if tools.complete and not force:
        return tools
    go = shutil.which("go")
    if go is None:
        raise RuntimeError(
            "the local control plane is built from Go modules, but no `go` is on PATH; "
            "install Go >= 1.24 and run again"
        )
    stamp_dir = tools.bin_dir.parent
    stamp_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".building-", dir=stamp_dir.parent))
    env = {**os.environ, "CGO_ENABLED": "0"}
    started = time.monotonic()
    _progress(f"building the control plane into {stamp_dir} (first time: several minutes)")
    try:
        for what, wrapper, arguments in _go_builds(staging / "bin"):
            step_started = time.monotonic()
            _progress(f"go build {what} ...")
            subprocess.run(
                [go, "build", "-trimpath", *arguments],
                cwd=GOMOD_DIR / wrapper,
                env=env,
                check=True,
            )
            _progress(f"  done in {time.monotonic() - step_started:.0f}s")
        (staging / "VERSIONS").write_text(
            "".join(
                f"{module} {version}\n"
                for module, version in sorted(versions.WRAPPER_MODULES.values())
            )
        )
        shutil.rmtree(stamp_dir, ignore_errors=True)
        staging.rename(stamp_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    _progress(f"control plane built in {time.monotonic() - started:.0f}s")
    return tools
