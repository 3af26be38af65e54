"""The operator's OCI image, built without a container daemon (``make image``).

The image is defined here once: a distroless-style root filesystem extracted from pinned
Debian bookworm packages (``debian.lock``), the project's dependencies minus Pulumi as
pinned wheels, and ``operator_runtime``; three deterministic layers (Debian, Python
dependencies, the operator) under an image config whose entrypoint is the Deployment's
``OPERATOR_COMMAND``. ``make image`` writes the OCI layout under ``dist/image/``;
``python -m hack.image push REF`` puts it into a registry.

This module is what tests read: ``built()`` (the image ``make image`` produced),
``config_document()`` (its image config), ``unpack()`` (a root filesystem, layers applied
in order) and ``root_filesystem()`` (the built image's, unpacked once and shared).
"""

from __future__ import annotations

import contextlib
import fcntl
import gzip
import json
import os
import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "DIST_DIR",
    "ImageBuild",
    "built",
    "config_document",
    "differences",
    "manifest",
    "read_build",
    "root_filesystem",
    "unpack",
]

REPO_ROOT = Path(__file__).resolve().parents[2]
DIST_DIR = REPO_ROOT / "dist" / "image"
"""What ``make image`` writes: ``oci/`` (the OCI layout) and ``build.json`` (its facts)."""
BUILD_FACTS = "build.json"
LAYOUT_DIR = "oci"
WHITEOUT_PREFIX = ".wh."
OPAQUE_WHITEOUT = ".wh..wh..opq"


@dataclass(frozen=True)
class ImageBuild:
    """One built image: where its OCI layout is and what it weighs."""

    layout: Path
    """An OCI image layout directory (index.json, oci-layout, blobs/sha256/...)."""
    digest: str
    """``sha256:...`` of the image manifest: what a registry reference pins."""
    compressed_bytes: int
    """The config and layer blobs as stored and pushed."""
    unpacked_bytes: int
    """The root filesystem's regular files, unpacked."""

    def describe(self) -> str:
        """What a build prints: digest, sizes, layout."""
        mib = 1024 * 1024
        return (
            f"digest:     {self.digest}\n"
            f"compressed: {self.compressed_bytes / mib:.1f} MiB ({self.compressed_bytes} bytes)\n"
            f"unpacked:   {self.unpacked_bytes / mib:.1f} MiB ({self.unpacked_bytes} bytes)\n"
            f"layout:     {self.layout}"
        )


def built() -> ImageBuild:
    """The image ``make image`` produced, checked against its layout's index."""
    return read_build(DIST_DIR, "operator image", "make image")


def read_build(dist_dir: Path, what: str, make_command: str) -> ImageBuild:
    """The image a build wrote under ``dist_dir`` (``oci/`` and ``build.json``), checked
    against its layout's index; ``make_command`` is what builds it."""
    facts_path = dist_dir / BUILD_FACTS
    layout = dist_dir / LAYOUT_DIR
    if not facts_path.is_file() or not (layout / "index.json").is_file():
        raise RuntimeError(
            f"no {what} under {dist_dir}: run `{make_command}` first (outside the "
            "sandbox: it downloads Debian packages and wheels)"
        )
    facts = json.loads(facts_path.read_text())
    image = ImageBuild(
        layout=layout,
        digest=str(facts["digest"]),
        compressed_bytes=int(facts["compressed_bytes"]),
        unpacked_bytes=int(facts["unpacked_bytes"]),
    )
    indexed = manifest_digest(layout)
    if indexed != image.digest:
        raise RuntimeError(
            f"{layout}/index.json names manifest {indexed}, but {facts_path} says "
            f"{image.digest}: the build was interrupted; run `{make_command}` again"
        )
    return image


def _blob(layout: Path, digest: str) -> Path:
    algorithm, _, hex_digest = digest.partition(":")
    return layout / "blobs" / algorithm / hex_digest


def manifest_digest(layout: Path) -> str:
    """The digest of the one image manifest an OCI layout's index.json names."""
    index = json.loads((layout / "index.json").read_text())
    manifests = index.get("manifests", [])
    if len(manifests) != 1:
        raise RuntimeError(
            f"{layout}/index.json has {len(manifests)} manifests; an image layout built "
            "here holds exactly one"
        )
    return str(manifests[0]["digest"])


def manifest(layout: Path) -> dict[str, Any]:
    """The image manifest of an OCI layout (config and layer descriptors)."""
    parsed: dict[str, Any] = json.loads(_blob(layout, manifest_digest(layout)).read_bytes())
    return parsed


def differences(first: Path, second: Path) -> list[str]:
    """What differs between two layouts' images: each layer (by index) and the config."""
    one, other = manifest(first), manifest(second)
    found = [
        f"layer {index} ({a['digest']} vs {b['digest']})"
        for index, (a, b) in enumerate(zip(one["layers"], other["layers"], strict=True))
        if a != b
    ]
    if one["config"] != other["config"]:
        found.append("config")
    return found


def config_document(layout: Path) -> dict[str, Any]:
    """The image config blob of an OCI layout (``config``, ``created``, ``os``, ...)."""
    parsed: dict[str, Any] = json.loads(
        _blob(layout, str(manifest(layout)["config"]["digest"])).read_bytes()
    )
    return parsed


def _inside(dest: Path, name: str) -> Path:
    """The path of a layer entry under ``dest``, refusing one that would leave it."""
    relative = Path(name.lstrip("/"))
    if ".." in relative.parts:
        raise RuntimeError(f"layer entry {name!r} leaves the root filesystem")
    target = dest / relative
    # A symlinked directory of an earlier entry must not carry a later one outside.
    parent = target.parent.resolve()
    if not parent.is_relative_to(dest.resolve()):
        raise RuntimeError(f"layer entry {name!r} resolves outside the root filesystem")
    return target


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def _apply_layer(layer: tarfile.TarFile, dest: Path) -> None:
    for member in layer:
        target = _inside(dest, member.name)
        base = target.name
        if base == OPAQUE_WHITEOUT:
            for child in target.parent.iterdir():
                _remove(child)
            continue
        if base.startswith(WHITEOUT_PREFIX):
            _remove(target.with_name(base[len(WHITEOUT_PREFIX) :]))
            continue
        if not (member.isdir() and target.is_dir() and not target.is_symlink()):
            _remove(target)
        # Modes as the image says (the sticky /tmp, setuid bits, if any): the layers are
        # our own, and the entry paths were checked above.
        layer.extract(member, dest, set_attrs=True, filter="fully_trusted")


def unpack(layout: Path, dest: Path) -> Path:
    """Apply the image's layers in order under ``dest``; return the root filesystem."""
    dest.mkdir(parents=True, exist_ok=True)
    for descriptor in manifest(layout)["layers"]:
        blob = _blob(layout, descriptor["digest"])
        opener = gzip.open if descriptor["mediaType"].endswith("gzip") else open
        with opener(blob, "rb") as stream, tarfile.open(fileobj=stream, mode="r|") as layer:
            _apply_layer(layer, dest)
    # tarfile restores a directory's mode after its entries; the root stays traversable.
    os.chmod(dest, 0o755)
    return dest


ROOTFS_DIR = "rootfs"


def root_filesystem(image: ImageBuild) -> Path:
    """The image's root filesystem beside its layout (``dist/image/rootfs/``), unpacked
    once per digest.

    Unpacking takes 10-20 s of CPU (the Ray image's, a minute); the image tests on
    several pytest workers, and the next ``make test``, share one copy. Treat it as
    read-only (the run-from-image test mounts it so). A lock lets one worker unpack while
    the others wait; a copy without its mark (an interrupted unpack) is thrown away, and
    so are other digests' copies.
    """
    rootfs_dir = image.layout.parent / ROOTFS_DIR
    rootfs_dir.mkdir(parents=True, exist_ok=True)
    root = rootfs_dir / image.digest.partition(":")[2][:16]
    mark = root.with_suffix(".unpacked")
    with (rootfs_dir / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if mark.is_file():
                return root
            for stale in rootfs_dir.iterdir():
                if stale.name != ".lock":
                    _remove(stale)
            unpack(image.layout, root)
            mark.touch()
            return root
        finally:
            with contextlib.suppress(OSError):
                fcntl.flock(lock, fcntl.LOCK_UN)
