"""The real node's Debian packages: pinned in ``debian.lock`` and ``firewall.lock``,
extracted, never installed.

Three things come from Debian bookworm rather than a Go module: ``nft`` (kube-proxy's
nftables mode execs it from PATH), with the closure of its shared libraries,
``libseccomp-dev``, whose headers and static library runc's seccomp support is linked
against, and, in a lock of their own, ``iptables`` and ``ipset`` with their libraries
(kube-router's NetworkPolicy firewall execs them). ``lock()`` and ``lock_firewall()``
resolve them against this machine's apt indexes; the hashes come from apt's signed
indexes and ``hack.image.debian.fetch`` checks every download.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from hack import gobuild
from hack.image import debian
from hack.node import versions

LOCK_FILE = Path(__file__).resolve().parent / "debian.lock"
FIREWALL_LOCK_FILE = LOCK_FILE.with_name("firewall.lock")
LOCK_COMMAND = "python -m hack.node lock"
REFRESH = f"refresh the lock with `{LOCK_COMMAND}` and commit hack/node/debian.lock"
FIREWALL_REFRESH = f"refresh the lock with `{LOCK_COMMAND}` and commit hack/node/firewall.lock"


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


def _closure(roots: tuple[str, ...], excluded: dict[str, str]) -> list[str]:
    """``roots`` and every package they need at run time, minus ``excluded``."""
    seen: set[str] = set()
    pending = list(roots)
    while pending:
        name = pending.pop()
        if name in seen or name in excluded:
            continue
        seen.add(name)
        pending.extend(_depends(name))
    return sorted(seen)


def nft_closure() -> list[str]:
    """``nftables`` and every package it needs at run time, minus the excluded."""
    return _closure((versions.NFT_ROOT,), versions.NFT_EXCLUDED)


def firewall_closure() -> list[str]:
    """``iptables``, ``ipset`` and every package they need at run time, minus the
    excluded."""
    return _closure(versions.FIREWALL_ROOTS, versions.FIREWALL_EXCLUDED)


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


def lock_firewall() -> list[debian.Package]:
    """Pin apt's current candidates of the firewall's packages in ``firewall.lock``."""
    packages = debian.locate(tuple(firewall_closure()))
    header = [
        f"# The real node's NetworkPolicy firewall's Debian packages ({LOCK_COMMAND} "
        "writes this; commit it).",
        f"# {' and '.join(versions.FIREWALL_ROOTS)} and their run-time closure, extracted "
        "beside kube-router, minus:",
        *(f"#   {name}: {why}" for name, why in sorted(versions.FIREWALL_EXCLUDED.items())),
        "# package version arch sha256 size url",
    ]
    FIREWALL_LOCK_FILE.write_text("\n".join([*header, *(p.line() for p in packages)]) + "\n")
    return packages


def locked() -> list[debian.Package]:
    return debian.read_lock(LOCK_FILE)


def firewall_locked() -> list[debian.Package]:
    return debian.read_lock(FIREWALL_LOCK_FILE)


def extract(names: set[str], root: Path, *, firewall: bool = False) -> None:
    """Download (cached, checked) the locked packages ``names`` (of ``firewall.lock`` if
    ``firewall``) and unpack them under ``root``: their files only, no maintainer
    script."""
    lock_file, refresh = (
        (FIREWALL_LOCK_FILE, FIREWALL_REFRESH) if firewall else (LOCK_FILE, REFRESH)
    )
    chosen = [p for p in debian.read_lock(lock_file) if p.name in names]
    missing = names - {p.name for p in chosen}
    if missing:
        raise RuntimeError(f"{lock_file} locks no {sorted(missing)}: {refresh}")
    for deb in debian.fetch(chosen, gobuild.cache_root() / "node" / "debs", refresh):
        subprocess.run(["dpkg-deb", "--extract", str(deb), str(root)], check=True)


def nft_packages() -> set[str]:
    """The locked packages ``bin/nft`` runs from: all but the build-time one."""
    return {p.name for p in locked()} - {versions.SECCOMP_PACKAGE}
