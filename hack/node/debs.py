"""The real node's Debian packages: pinned in ``debian.lock``, extracted, never installed.

Two things come from Debian bookworm rather than a Go module: ``nft`` (kube-proxy's
nftables mode execs it from PATH), with the closure of its shared libraries, and
``libseccomp-dev``, whose headers and static library runc's seccomp support is linked
against. ``lock()`` resolves them against this machine's apt indexes; the hashes come
from apt's signed indexes and ``hack.image.debian.fetch`` checks every download.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from hack import gobuild
from hack.image import debian
from hack.node import versions

LOCK_FILE = Path(__file__).resolve().parent / "debian.lock"
LOCK_COMMAND = "python -m hack.node lock"
REFRESH = f"refresh the lock with `{LOCK_COMMAND}` and commit hack/node/debian.lock"


def _depends(name: str) -> list[str]:
    """``name``'s Depends and Pre-Depends (first of each group of alternatives)."""
    shown = subprocess.run(
        ["apt-cache", "depends", "--no-recommends", "--no-suggests", "--no-conflicts",
         "--no-breaks", "--no-replaces", "--no-enhances", f"{name}:{debian.ARCH}"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    found = []
    for line in shown.splitlines():
        kind, _, target = line.strip().lstrip("|").partition(":")
        if kind in ("Depends", "PreDepends") and not target.strip().startswith("<"):
            found.append(target.strip().split(":")[0])
    return found


def nft_closure() -> list[str]:
    """``nftables`` and every package it needs at run time, minus the excluded."""
    seen: set[str] = set()
    pending = [versions.NFT_ROOT]
    while pending:
        name = pending.pop()
        if name in seen or name in versions.NFT_EXCLUDED:
            continue
        seen.add(name)
        pending.extend(_depends(name))
    return sorted(seen)


def lock() -> list[debian.Package]:
    """Pin apt's current candidates of both sets in ``debian.lock``."""
    packages = debian.locate((*nft_closure(), versions.SECCOMP_PACKAGE))
    header = [
        f"# The real node's Debian packages ({LOCK_COMMAND} writes this; commit it).",
        f"# {versions.NFT_ROOT} and its run-time closure, extracted beside bin/nft, minus:",
        *(f"#   {name}: {why}" for name, why in sorted(versions.NFT_EXCLUDED.items())),
        f"# {versions.SECCOMP_PACKAGE}: runc's static libseccomp, read at build time only.",
        "# package version arch sha256 size url",
    ]
    LOCK_FILE.write_text("\n".join([*header, *(p.line() for p in packages)]) + "\n")
    return packages


def locked() -> list[debian.Package]:
    return debian.read_lock(LOCK_FILE)


def extract(names: set[str], root: Path) -> None:
    """Download (cached, checked) the locked packages ``names`` and unpack them under
    ``root``: their files only, no maintainer script."""
    chosen = [p for p in locked() if p.name in names]
    missing = names - {p.name for p in chosen}
    if missing:
        raise RuntimeError(f"{LOCK_FILE} locks no {sorted(missing)}: {REFRESH}")
    for deb in debian.fetch(chosen, gobuild.cache_root() / "node" / "debs", REFRESH):
        subprocess.run(["dpkg-deb", "--extract", str(deb), str(root)], check=True)


def nft_packages() -> set[str]:
    """The locked packages ``bin/nft`` runs from: all but the build-time one."""
    return {p.name for p in locked()} - {versions.SECCOMP_PACKAGE}
