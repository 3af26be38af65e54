"""Build the real node's binaries (kubelet, kube-proxy, containerd and its shim, ctr,
runc, the CNI plugins, CoreDNS, pause) from pinned sources, and extract Debian's ``nft``
beside them; see ``hack.gobuild`` for the cache and its stamps.

Every binary is static except ``nft``, which runs from its extracted Debian files
through the ``bin/nft`` wrapper. Only runc needs cgo (its namespace setup is C); it is
linked statically against the locked ``libseccomp-dev``, so that seccomp profiles
(RuntimeDefault) work and the binary does not depend on the machine's libseccomp.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hack import gobuild
from hack.localcluster.build import kubernetes_ldflags
from hack.node import debs, versions

FAMILY = "node"
GOMOD_DIR = Path(__file__).resolve().parent / "gomod"
RECIPE_REVISION = 1
"""Bump when the build steps change in a way the digest of the inputs cannot see."""

CONTAINERD_TAGS = "no_aufs no_zfs no_btrfs no_devmapper"
"""kind's: no snapshotters but overlayfs and native, so no C and no extra tools."""
RUNC_TAGS = "seccomp netgo osusergo urfave_cli_no_docs"
"""seccomp for RuntimeDefault profiles; netgo and osusergo keep a static binary off
glibc's NSS (which cannot be linked statically); no man-page generator."""
MULTIARCH = "x86_64-linux-gnu"
PAUSE_SOURCE = "build/pause/linux/pause.c"
NFT_ROOT = "nftables"
"""Where, beside ``bin/``, the nft packages are extracted."""

NFT_WRAPPER = f"""#!/bin/sh
# Debian's nft, run from its extracted files with its own libraries (nothing installed).
root="$(dirname "$(readlink -f "$0")")/../{NFT_ROOT}"
libraries="$root/usr/lib/{MULTIARCH}:$root/lib/{MULTIARCH}"
LD_LIBRARY_PATH="$libraries${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}" exec "$root/usr/sbin/nft" "$@"
"""


def _go_build(what: str, wrapper: str, *arguments: str, env: dict[str, str] | None = None) -> None:
    gobuild.run_go(
        FAMILY, f"go build {what}", ["build", "-trimpath", *arguments], GOMOD_DIR / wrapper, env
    )


def _kubernetes(bin_dir: Path) -> None:
    _go_build(
        f"kubelet, kube-proxy {versions.KUBERNETES}", "kubernetes",
        "-ldflags", kubernetes_ldflags(versions.KUBERNETES), "-o", f"{bin_dir}/",
        "k8s.io/kubernetes/cmd/kubelet", "k8s.io/kubernetes/cmd/kube-proxy",
    )  # fmt: skip


def _containerd(bin_dir: Path) -> None:
    module = "github.com/containerd/containerd/v2"
    _go_build(
        f"containerd, containerd-shim-runc-v2, ctr {versions.CONTAINERD}", "containerd",
        "-tags", CONTAINERD_TAGS,
        "-ldflags", f"-s -w -X {module}/version.Version={versions.CONTAINERD}",
        "-o", f"{bin_dir}/",
        *(f"{module}/cmd/{name}" for name in ("containerd", "containerd-shim-runc-v2", "ctr")),
    )  # fmt: skip


def _runc(bin_dir: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="libseccomp-") as sysroot:
        debs.extract({versions.SECCOMP_PACKAGE}, Path(sysroot))
        include, lib = f"{sysroot}/usr/include", f"{sysroot}/usr/lib/{MULTIARCH}"
        env = {
            "CGO_ENABLED": "1",
            "CGO_CFLAGS": f"-O2 -g -I{include}",
            "CGO_LDFLAGS": f"-L{lib}",
            # libseccomp-golang asks pkg-config: answer from the extracted package only,
            # and keep its -I/-L even though they look like system directories.
            "PKG_CONFIG_LIBDIR": f"{lib}/pkgconfig",
            "PKG_CONFIG_SYSROOT_DIR": sysroot,
            "PKG_CONFIG_ALLOW_SYSTEM_CFLAGS": "1",
            "PKG_CONFIG_ALLOW_SYSTEM_LIBS": "1",
        }
        _go_build(
            f"runc {versions.RUNC} (cgo, static, seccomp)", "runc",
            "-tags", RUNC_TAGS, "-ldflags", "-s -w -extldflags -static",
            "-o", str(bin_dir / "runc"), "github.com/opencontainers/runc",
            env=env,
        )  # fmt: skip


def _cni(bin_dir: Path) -> None:
    module = "github.com/containernetworking/plugins"
    _go_build(
        f"CNI plugins {versions.CNI_PLUGINS}", "cni",
        "-ldflags", f"-s -w -X {module}/pkg/utils/buildversion.BuildVersion={versions.CNI_PLUGINS}",
        "-o", f"{bin_dir}/",
        *(f"{module}/plugins/{path}"
          for path in ("main/bridge", "ipam/host-local", "main/loopback", "meta/portmap")),
    )  # fmt: skip


def _coredns(bin_dir: Path) -> None:
    _go_build(
        f"coredns {versions.COREDNS} ({', '.join(versions.COREDNS_PLUGINS)})", "coredns",
        "-ldflags", "-s -w", "-o", str(bin_dir / "coredns"), ".",
    )  # fmt: skip


def _pause(bin_dir: Path) -> None:
    """The sandbox container's process, compiled as Kubernetes' own Makefile does, from
    the k8s.io/kubernetes module already in the module cache."""
    listed = subprocess.run(
        [gobuild.go(), "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes"],
        cwd=GOMOD_DIR / "kubernetes", env=gobuild.go_env(), capture_output=True, text=True,
        check=True,
    )  # fmt: skip
    source = Path(listed.stdout.strip()) / PAUSE_SOURCE
    tag = _pause_tag(source.parents[1] / "Makefile")
    # Upstream's version string is v<TAG>-<git describe>; the release tag stands in.
    version = f"v{tag}-{versions.KUBERNETES}"
    _step(
        f"gcc pause {version}",
        ["gcc", "-Os", "-Wall", "-Werror", "-static", f"-DVERSION={version}",
         "-o", str(bin_dir / "pause"), str(source)],
    )  # fmt: skip


def _pause_tag(makefile: Path) -> str:
    for line in makefile.read_text().splitlines():
        if line.startswith("TAG ?="):
            return line.partition("=")[2].strip()
    raise RuntimeError(f"{makefile} names no TAG: the pause recipe needs a look")


def _nft(bin_dir: Path) -> None:
    root = bin_dir.parent / NFT_ROOT
    started = time.monotonic()
    debs.extract(debs.nft_packages(), root)
    wrapper = bin_dir / "nft"
    wrapper.write_text(NFT_WRAPPER)
    wrapper.chmod(0o755)
    _step("nft --version (through bin/nft)", [str(wrapper), "--version"])
    gobuild.progress(FAMILY, f"  nft extracted in {time.monotonic() - started:.0f}s")


def _step(what: str, command: list[str]) -> None:
    gobuild.progress(FAMILY, f"{what} ...")
    started = time.monotonic()
    subprocess.run(command, check=True)
    gobuild.progress(FAMILY, f"  done in {time.monotonic() - started:.0f}s")


@dataclass(frozen=True)
class Recipe:
    binaries: tuple[str, ...]
    build: Callable[[Path], None]


RECIPES = (
    Recipe(("kubelet", "kube-proxy"), _kubernetes),
    Recipe(("containerd", "containerd-shim-runc-v2", "ctr"), _containerd),
    Recipe(("runc",), _runc),
    Recipe(("bridge", "host-local", "loopback", "portmap"), _cni),
    Recipe(("coredns",), _coredns),
    Recipe(("pause",), _pause),
    Recipe(("nft",), _nft),
)
BINARIES = tuple(binary for recipe in RECIPES for binary in recipe.binaries)


NODE_WRAPPERS = tuple(
    w
    for w in versions.WRAPPER_MODULES
    if w not in versions.STORAGE_WRAPPERS + versions.FIREWALL_WRAPPERS
)
STORAGE_FAMILY = "node-storage"
STORAGE_BINARIES = ("local-path-provisioner",)


def node_tools() -> gobuild.Built:
    """The node's binaries for the current pins, built or not."""
    digest = gobuild.wrapper_digest(
        GOMOD_DIR, NODE_WRAPPERS, f"recipe {RECIPE_REVISION}",
        (GOMOD_DIR / "coredns" / "main.go").read_text(), debs.LOCK_FILE.read_text(),
    )  # fmt: skip
    stamp = (
        f"k8s-{versions.KUBERNETES}-containerd-{versions.CONTAINERD}-runc-{versions.RUNC}"
        f"-cni-{versions.CNI_PLUGINS}-coredns-{versions.COREDNS}-{digest}"
    )
    return gobuild.Built(root=gobuild.cache_root() / FAMILY / stamp, binaries=BINARIES)


def _build(bin_dir: Path) -> None:
    for recipe in RECIPES:
        recipe.build(bin_dir)


def ensure_built(force: bool = False) -> gobuild.Built:
    """Build the node's binaries unless the cache already holds this stamp; return them."""
    debian = "".join(f"debian {p.name} {p.version}\n" for p in debs.locked())
    versions_text = gobuild.module_lines(versions.WRAPPER_MODULES[w] for w in NODE_WRAPPERS)
    versions_text += debian
    return gobuild.ensure(
        node_tools(),
        family=FAMILY,
        build=_build,
        versions_text=versions_text,
        force=force,
        make_target="node",
        expected="about 15 minutes on 2 cores",
    )


KUBELET_BINARIES = ("kubelet", "kube-proxy")
KUBELET_FAMILY = "node-kubelet"


@dataclass(frozen=True)
class WithKubelet(gobuild.Built):
    """The node's binaries with its kubelet and kube-proxy from another build
    (``kubelet``): everything else, ``bin_dir`` included, is the node's own."""

    kubelet: gobuild.Built | None = None

    def path(self, binary: str) -> Path:
        if self.kubelet is not None and binary in KUBELET_BINARIES:
            return self.kubelet.path(binary)
        return super().path(binary)


def kubelet_tools(kubernetes: str) -> gobuild.Built:
    """The kubelet and kube-proxy of ``kubernetes`` (a key of
    ``versions.KUBELET_WRAPPERS``), built or not."""
    wrapper = versions.KUBELET_WRAPPERS[kubernetes]
    digest = gobuild.wrapper_digest(GOMOD_DIR, [wrapper], f"recipe {RECIPE_REVISION}")
    return gobuild.Built(root=gobuild.cache_root() / KUBELET_FAMILY / f"k8s-{kubernetes}-{digest}",
                         binaries=KUBELET_BINARIES)  # fmt: skip


def ensure_kubelet_built(kubernetes: str, force: bool = False) -> gobuild.Built:
    """The node's binaries with the kubelet and kube-proxy of ``kubernetes`` (the
    default: ``ensure_built``'s own), each part built unless cached."""
    node = ensure_built(force)
    if kubernetes == versions.KUBERNETES:
        return node
    wrapper = versions.KUBELET_WRAPPERS[kubernetes]

    def build(bin_dir: Path) -> None:
        _go_build(
            f"kubelet, kube-proxy {kubernetes}", wrapper,
            "-ldflags", kubernetes_ldflags(kubernetes), "-o", f"{bin_dir}/",
            "k8s.io/kubernetes/cmd/kubelet", "k8s.io/kubernetes/cmd/kube-proxy",
        )  # fmt: skip

    kubelet = gobuild.ensure(
        kubelet_tools(kubernetes), family=KUBELET_FAMILY, build=build,
        versions_text=gobuild.module_lines([("k8s.io/kubernetes", kubernetes)]),
        force=force, make_target=f"node-{kubernetes.lstrip('v').rsplit('.', 1)[0]}",
        expected="some 10 minutes on 2 cores",
    )  # fmt: skip
    return WithKubelet(root=node.root, binaries=node.binaries, kubelet=kubelet)


def storage_tools() -> gobuild.Built:
    """The node's volume provisioner for the current pin, built or not."""
    digest = gobuild.wrapper_digest(GOMOD_DIR, versions.STORAGE_WRAPPERS)
    stamp = f"local-path-provisioner-{versions.LOCAL_PATH_PROVISIONER}-{digest}"
    return gobuild.Built(root=gobuild.cache_root() / STORAGE_FAMILY / stamp,
                         binaries=STORAGE_BINARIES)  # fmt: skip


def _build_storage(bin_dir: Path) -> None:
    module = "github.com/rancher/local-path-provisioner"
    _go_build(
        f"local-path-provisioner {versions.LOCAL_PATH_PROVISIONER}", "localpath",
        "-ldflags", f"-s -w -X main.VERSION={versions.LOCAL_PATH_PROVISIONER}",
        "-o", str(bin_dir / "local-path-provisioner"), module,
    )  # fmt: skip


def ensure_storage_built(force: bool = False) -> gobuild.Built:
    """Build the node's volume provisioner unless the cache holds this stamp."""
    return gobuild.ensure(
        storage_tools(),
        family=STORAGE_FAMILY,
        build=_build_storage,
        versions_text=gobuild.module_lines(
            versions.WRAPPER_MODULES[w] for w in versions.STORAGE_WRAPPERS
        ),
        force=force,
        make_target="node",
        expected="about 3 minutes on 2 cores",
    )


def ensure_all_built(force: bool = False) -> gobuild.Built:
    """Everything the node runs (``make node``); returns its main binaries."""
    ensure_storage_built(force)
    ensure_firewall_built(force)
    return ensure_built(force)


FIREWALL_FAMILY = "node-firewall"
FIREWALL_ROOT = "firewall"
"""Where, beside ``bin/``, the iptables and ipset packages are extracted."""
FIREWALL_COMMANDS = {
    "iptables": "usr/sbin/iptables-legacy",
    "iptables-save": "usr/sbin/iptables-legacy-save",
    "iptables-restore": "usr/sbin/iptables-legacy-restore",
    "ipset": "usr/sbin/ipset",
}
"""The commands kube-router's firewall finds on PATH -> the extracted file each runs.
The legacy (x_tables) iptables: the nftables one would share nf_tables with kube-proxy's
table for nothing, and kube-router reads which one it has from ``iptables --version``."""
FIREWALL_BINARIES = ("kube-router", *FIREWALL_COMMANDS)


def firewall_wrapper(command: str, target: str) -> str:
    """``bin/<command>``: Debian's ``target``, run from its extracted files with its own
    libraries and iptables extensions."""
    return f"""#!/bin/sh
# Debian's {command}, run from its extracted files (nothing installed).
root="$(dirname "$(readlink -f "$0")")/../{FIREWALL_ROOT}"
libraries="$root/usr/lib/{MULTIARCH}:$root/lib/{MULTIARCH}"
export XTABLES_LIBDIR="$root/usr/lib/{MULTIARCH}/xtables"
LD_LIBRARY_PATH="$libraries${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}" exec "$root/{target}" "$@"
"""


def firewall_tools() -> gobuild.Built:
    """The node's NetworkPolicy enforcer (kube-router's firewall) and the iptables and
    ipset it execs, for the current pins, built or not."""
    digest = gobuild.wrapper_digest(
        GOMOD_DIR, versions.FIREWALL_WRAPPERS, firewall_wrapper("COMMAND", "TARGET"),
        json.dumps(FIREWALL_COMMANDS),
        debs.FIREWALL_LOCK_FILE.read_text(),
    )  # fmt: skip
    stamp = f"kube-router-{versions.KUBE_ROUTER}-{digest}"
    return gobuild.Built(root=gobuild.cache_root() / FIREWALL_FAMILY / stamp,
                         binaries=FIREWALL_BINARIES)  # fmt: skip


def _build_firewall(bin_dir: Path) -> None:
    module = "github.com/cloudnativelabs/kube-router/v2"
    _go_build(
        f"kube-router {versions.KUBE_ROUTER}", "kuberouter",
        "-ldflags", f"-s -w -X {module}/pkg/version.Version={versions.KUBE_ROUTER}",
        "-o", str(bin_dir / "kube-router"), f"{module}/cmd/kube-router",
    )  # fmt: skip
    debs.extract({p.name for p in debs.firewall_locked()}, bin_dir.parent / FIREWALL_ROOT,
                 firewall=True)  # fmt: skip
    for command, target in FIREWALL_COMMANDS.items():
        wrapper = bin_dir / command
        wrapper.write_text(firewall_wrapper(command, target))
        wrapper.chmod(0o755)
    _step("iptables --version (through bin/iptables)", [str(bin_dir / "iptables"), "--version"])
    _step("ipset --version (through bin/ipset)", [str(bin_dir / "ipset"), "--version"])


def ensure_firewall_built(force: bool = False) -> gobuild.Built:
    """Build the node's NetworkPolicy enforcer unless the cache holds this stamp."""
    debian = "".join(f"debian {p.name} {p.version}\n" for p in debs.firewall_locked())
    return gobuild.ensure(
        firewall_tools(),
        family=FIREWALL_FAMILY,
        build=_build_firewall,
        versions_text=gobuild.module_lines(
            versions.WRAPPER_MODULES[w] for w in versions.FIREWALL_WRAPPERS
        )
        + debian,
        force=force,
        make_target="node",
        expected="about 4 minutes on 2 cores",
    )
