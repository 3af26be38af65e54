"""The operator's OCI image, built without a container daemon (``make image``).

The image is defined here once: a distroless-style root filesystem extracted from pinned
Debian bookworm packages (``debian.lock``, ``debian-arm64.lock``), the project's
dependencies minus Pulumi as pinned wheels, and ``operator_runtime``; three
deterministic layers (Debian, Python dependencies, the operator) under an image config
whose entrypoint is the Deployment's ``OPERATOR_COMMAND``, for each platform
(``platform.PLATFORMS``: linux/amd64 and linux/arm64), under one OCI image index.
``make image`` writes the OCI layout under ``dist/image/``; ``python -m hack.image push
REF`` puts it into a registry.

This module is what tests read: ``built()`` (the image ``make image`` produced),
``config_document()`` (its image config), ``unpack()`` (a root filesystem, layers applied
in order) and ``root_filesystem()`` (the built image's, unpacked once and shared). Each
takes the platform's architecture where the layout holds an index, the build machine's
by default; the Ray and Redis images' layouts hold one image and take none.
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

from hack.image.platform import BUILD

__all__ = [
    "DIST_DIR",
    "ImageBuild",
    "PlatformImage",
    "built",
    "config_document",
    "differences",
    "is_artifact",
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
class PlatformImage:
    """One platform's image of an index."""

    arch: str
    digest: str
    """``sha256:...`` of the platform's image manifest."""
    compressed_bytes: int
    unpacked_bytes: int


@dataclass(frozen=True)
class ImageBuild:
    """One built image: where its OCI layout is and what it weighs."""

    layout: Path
    """An OCI image layout directory (index.json, oci-layout, blobs/sha256/...)."""
    digest: str
    """``sha256:...`` of the image manifest, or of the image index for a multi-platform
    image: what a registry reference pins."""
    compressed_bytes: int
    """The config and layer blobs as stored and pushed (every platform's)."""
    unpacked_bytes: int
    """The root filesystem's regular files, unpacked (every platform's)."""
    platforms: tuple[PlatformImage, ...] = ()
    """An index's images, in its order; empty for a single-platform layout."""

    def describe(self) -> str:
        """What a build prints: digest, sizes, layout."""
        mib = 1024 * 1024
        lines = [f"digest:     {self.digest}"]
        for image in self.platforms:
            lines.append(
                f"  linux/{image.arch}: {image.digest}, {image.compressed_bytes / mib:.1f} MiB "
                f"compressed, {image.unpacked_bytes / mib:.1f} MiB unpacked"
            )
        lines += [
            f"compressed: {self.compressed_bytes / mib:.1f} MiB ({self.compressed_bytes} bytes)",
            f"unpacked:   {self.unpacked_bytes / mib:.1f} MiB ({self.unpacked_bytes} bytes)",
            f"layout:     {self.layout}",
        ]
        return "\n".join(lines)

    def platform(self, arch: str) -> PlatformImage:
        for image in self.platforms:
            if image.arch == arch:
                return image
        raise KeyError(f"the image {self.digest} has no linux/{arch} platform")


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
        platforms=tuple(
            PlatformImage(
                arch=str(p["arch"]), digest=str(p["digest"]),
                compressed_bytes=int(p["compressed_bytes"]),
                unpacked_bytes=int(p["unpacked_bytes"]),
            )
            for p in facts.get("platforms", ())
        ),
    )  # fmt: skip
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


IMAGE_CONFIG_TYPES = frozenset(
    {"application/vnd.oci.image.config.v1+json", "application/vnd.docker.container.image.v1+json"}
)
"""The artifactType go-containerregistry gives an image's own descriptor in index.json
(its config's media type): an image, not an artifact beside it."""


def is_artifact(descriptor: dict[str, Any]) -> bool:
    """Whether an index.json entry is an artifact (an SBOM) rather than an image."""
    return descriptor.get("artifactType", "") not in {"", *IMAGE_CONFIG_TYPES}


def _image_descriptor(layout: Path) -> dict[str, Any]:
    """The one image (a manifest, or an index of platforms' manifests) an OCI layout's
    index.json names; artifacts beside it (the SBOMs) are left out."""
    index = json.loads((layout / "index.json").read_text())
    images = [d for d in index.get("manifests", []) if not is_artifact(d)]
    if len(images) != 1:
        raise RuntimeError(
            f"{layout}/index.json names {len(images)} images; an image layout built here "
            "holds exactly one (a single-platform manifest or a multi-platform index)"
        )
    descriptor: dict[str, Any] = images[0]
    return descriptor


def manifest_digest(layout: Path) -> str:
    """The digest of the image an OCI layout's index.json names: its manifest's, or its
    image index's."""
    return str(_image_descriptor(layout)["digest"])


def _document(layout: Path, digest: str) -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(_blob(layout, digest).read_bytes())
    return parsed


def image_index(layout: Path) -> dict[str, Any] | None:
    """The image index of a multi-platform layout; None for a single image."""
    descriptor = _image_descriptor(layout)
    if not descriptor["mediaType"].endswith("index.v1+json"):
        return None
    return _document(layout, str(descriptor["digest"]))


def manifest(layout: Path, arch: str | None = None) -> dict[str, Any]:
    """The image manifest of an OCI layout (config and layer descriptors): ``arch``'s,
    the build machine's by default, where the layout holds an index."""
    index = image_index(layout)
    if index is None:
        if arch is not None:
            raise RuntimeError(f"{layout} holds one image, not one per platform ({arch})")
        return _document(layout, manifest_digest(layout))
    wanted = arch or BUILD.arch
    for descriptor in index["manifests"]:
        if descriptor.get("platform", {}).get("architecture") == wanted:
            return _document(layout, str(descriptor["digest"]))
    raise RuntimeError(f"{layout}'s image index has no linux/{wanted} image")


def architectures(layout: Path) -> list[str]:
    """The platforms of a layout's index, in its order ([] for a single image)."""
    index = image_index(layout)
    if index is None:
        return []
    return [str(d["platform"]["architecture"]) for d in index["manifests"]]


def differences(first: Path, second: Path) -> list[str]:
    """What differs between two layouts' images: each layer (by index) and the config,
    for every platform of an index."""
    found = []
    platforms: list[str | None] = [*architectures(first)] or [None]
    for arch in platforms:
        one, other = manifest(first, arch), manifest(second, arch)
        where = f"linux/{arch} " if arch else ""
        found += [
            f"{where}layer {index} ({a['digest']} vs {b['digest']})"
            for index, (a, b) in enumerate(zip(one["layers"], other["layers"], strict=True))
            if a != b
        ]
        if one["config"] != other["config"]:
            found.append(f"{where}config")
    return found


def config_document(layout: Path, arch: str | None = None) -> dict[str, Any]:
    """The image config blob of an OCI layout (``config``, ``created``, ``os``, ...)."""
    return _document(layout, str(manifest(layout, arch)["config"]["digest"]))


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


def unpack(layout: Path, dest: Path, arch: str | None = None) -> Path:
    """Apply the image's layers in order under ``dest``; return the root filesystem."""
    dest.mkdir(parents=True, exist_ok=True)
    for descriptor in manifest(layout, arch)["layers"]:
        blob = _blob(layout, descriptor["digest"])
        opener = gzip.open if descriptor["mediaType"].endswith("gzip") else open
        with opener(blob, "rb") as stream, tarfile.open(fileobj=stream, mode="r|") as layer:
            _apply_layer(layer, dest)
    # tarfile restores a directory's mode after its entries; the root stays traversable.
    os.chmod(dest, 0o755)
    return dest


ROOTFS_DIR = "rootfs"


def root_filesystem(image: ImageBuild, arch: str | None = None) -> Path:
    """The image's root filesystem beside its layout (``dist/image/rootfs/``; another
    platform's than the build machine's under ``rootfs-<arch>/``), unpacked once per
    digest.

    Unpacking takes 10-20 s of CPU (the Ray image's, a minute); the image tests on
    several pytest workers, and the next ``make test``, share one copy. Treat it as
    read-only (the run-from-image test mounts it so). A lock lets one worker unpack while
    the others wait; a copy without its mark (an interrupted unpack) is thrown away, and
    so are other digests' copies.
    """
    rootfs_dir = image.layout.parent / (f"{ROOTFS_DIR}-{arch}" if arch else ROOTFS_DIR)
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
            unpack(image.layout, root, arch)
            mark.touch()
            return root
        finally:
            with contextlib.suppress(OSError):
                fcntl.flock(lock, fcntl.LOCK_UN)
