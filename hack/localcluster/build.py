"""Build the control-plane binaries (etcd, kube-apiserver, kube-controller-manager,
kube-scheduler, kubectl, kwok) from their pinned Go modules; see ``hack.gobuild``."""

from __future__ import annotations

from pathlib import Path

from hack import gobuild
from hack.localcluster import versions

FAMILY = "localcluster"
GOMOD_DIR = Path(__file__).resolve().parent / "gomod"
RECIPE_REVISION = 1
"""Bump when the build steps change in a way the wrapper digest cannot see."""

BINARIES = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubectl",
    "kwok",
)
KUBERNETES_COMMANDS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")

Toolset = gobuild.Built
MAKE_TARGETS = {versions.KUBERNETES: "localcluster", versions.KUBERNETES_1_36: "localcluster-1.36"}
"""The make target that builds each version's toolset (what a sandboxed test names when
it is missing)."""


def toolset(kubernetes: str = versions.KUBERNETES) -> Toolset:
    """The toolset of the control-plane version ``kubernetes`` (a key of
    ``versions.KUBERNETES_WRAPPERS``), built or not. Each version has its own stamp, whose
    digest covers only its own wrapper beside etcd's and kwok's: a change to one
    version's pins rebuilds that version alone."""
    digest = gobuild.wrapper_digest(
        GOMOD_DIR, versions.wrapper_modules(kubernetes), f"recipe {RECIPE_REVISION}"
    )
    stamp = f"k8s-{kubernetes}-etcd-{versions.ETCD}-kwok-{versions.KWOK}-{digest}"
    return Toolset(root=gobuild.cache_root() / FAMILY / stamp, binaries=BINARIES)


def kubernetes_of(tools: Toolset) -> str:
    """The control-plane version a toolset's stamp was built for."""
    return tools.root.name.split("-")[1]


def kubernetes_ldflags(version: str = versions.KUBERNETES) -> str:
    """Strip and stamp a k8s.io/kubernetes command as a release build of ``version``
    (``--version`` and the version the API server and kubelet report)."""
    major, minor = version.lstrip("v").split(".")[:2]
    flags = ["-s", "-w"]
    # Both packages carry a version: component-base for the servers, client-go for kubectl.
    for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [
            f"-X {package}.gitVersion={version}",
            f"-X {package}.gitMajor={major}",
            f"-X {package}.gitMinor={minor}",
            f"-X {package}.gitTreeState=clean",
            f"-X {package}.buildDate=1970-01-01T00:00:00Z",
        ]
    return " ".join(flags)


def _build(bin_dir: Path, kubernetes: str) -> None:
    def go_build(what: str, wrapper: str, *arguments: str) -> None:
        gobuild.run_go(
            FAMILY, f"go build {what}", ["build", "-trimpath", *arguments], GOMOD_DIR / wrapper
        )

    go_build(
        f"etcd {versions.ETCD}", "etcd",
        "-ldflags", "-s -w", "-o", str(bin_dir / "etcd"), "go.etcd.io/etcd/server/v3",
    )  # fmt: skip
    go_build(
        f"kwok {versions.KWOK}", "kwok",
        "-ldflags", f"-s -w -X sigs.k8s.io/kwok/pkg/consts.Version={versions.KWOK}",
        "-o", str(bin_dir / "kwok"), "sigs.k8s.io/kwok/cmd/kwok",
    )  # fmt: skip
    go_build(
        f"{', '.join(KUBERNETES_COMMANDS)} {kubernetes}", versions.KUBERNETES_WRAPPERS[kubernetes],
        "-ldflags", kubernetes_ldflags(kubernetes), "-o", f"{bin_dir}/",
        *[f"k8s.io/kubernetes/cmd/{name}" for name in KUBERNETES_COMMANDS],
    )  # fmt: skip


def ensure_built(*, force: bool = False, kubernetes: str = versions.KUBERNETES) -> Toolset:
    """Build the binaries of control-plane version ``kubernetes`` unless the cache already
    holds its stamp; return them."""
    return gobuild.ensure(
        toolset(kubernetes),
        family=FAMILY,
        build=lambda bin_dir: _build(bin_dir, kubernetes),
        versions_text=gobuild.module_lines(versions.wrapper_modules(kubernetes).values()),
        force=force,
        make_target=MAKE_TARGETS[kubernetes],
    )
