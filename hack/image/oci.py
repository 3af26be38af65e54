"""From layer trees to an OCI image layout: what every image built here shares.

The layer tars are written in Python (``layers.py``: the same tree gives the same bytes);
compressing them and writing the layout is ``ocitool``'s (``gomod/main.go``), built once
from its pinned wrapper module. ``assemble`` does both and records the image's facts in
``build.json`` beside the layout, which ``hack.image.read_build`` checks on reading.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from hack import gobuild
from hack.image import BUILD_FACTS, LAYOUT_DIR, REPO_ROOT, ImageBuild, PlatformImage, debian
from hack.image.layers import write_layer
from hack.image.platform import Platform
from hack.image.user import ImageUser

FAMILY = "image"
GOMOD_DIR = Path(__file__).resolve().parent / "gomod"
RECIPE_REVISION = 2


def progress(message: str) -> None:
    gobuild.progress(FAMILY, message)


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


def git(*arguments: str) -> str:
    return subprocess.run(
        ["git", *arguments], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()


def recipe_date(recipe: Sequence[str]) -> datetime:
    """The time of the last commit that changed ``recipe`` (paths of the repository): an
    image dated by it keeps its digest across commits elsewhere."""
    epoch = git("log", "-1", "--format=%ct", "--", *recipe)
    return datetime.fromtimestamp(int(epoch), tz=UTC)


def source_date() -> datetime:
    """SOURCE_DATE_EPOCH if set, else HEAD's commit time: the image's ``created``."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH") or git("log", "-1", "--format=%ct")
    return datetime.fromtimestamp(int(epoch), tz=UTC)


@contextlib.contextmanager
def building(out: Path) -> Iterator[Path]:
    """A scratch directory inside ``out`` for one build's trees and tars (removed after),
    and the build's time reported at its end."""
    started = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".image-", dir=out) as scratch:
        yield Path(scratch)
    progress(f"built in {time.monotonic() - started:.0f}s")


@dataclass(frozen=True)
class Layer:
    tree: Path
    """A directory laid out as the root filesystem (``usr/...``)."""
    created_by: str
    """The history entry: what the layer holds and where it is pinned."""


def assemble(
    out: Path,
    layers: Sequence[Layer],
    config: Mapping[str, object],
    user: ImageUser,
    scratch: Path,
    created: datetime,
) -> ImageBuild:
    """Write ``layers`` (in order) under ``config`` as the OCI layout ``out/oci`` and its
    facts as ``out/build.json``; the layer tars are made in ``scratch``. ``created`` dates
    the image and its history (the layers' own entries are all at ``layers.MTIME``)."""
    tool = ocitool()
    progress("writing the layers")
    specs, unpacked = [], 0
    for index, layer in enumerate(layers):
        tar = scratch / f"layer-{index}.tar"
        unpacked += write_layer(layer.tree, tar, user)
        specs.append({"path": str(tar), "created_by": layer.created_by})
    spec = {
        "layers": specs,
        "config": dict(config),
        "created": created.isoformat().replace("+00:00", "Z"),
        "os": "linux",
        "architecture": debian.ARCH,
    }
    with tempfile.NamedTemporaryFile("w", suffix=".json", dir=scratch, delete=False) as file:
        json.dump(spec, file, indent=2)
    progress("assembling the OCI layout (gzip)")
    layout = out / LAYOUT_DIR
    digest = subprocess.run(
        [str(tool), "assemble", "--spec", file.name, "--layout", str(layout)],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    manifest = json.loads((layout / "blobs" / "sha256" / digest.split(":", 1)[1]).read_bytes())
    compressed = manifest["config"]["size"] + sum(layer["size"] for layer in manifest["layers"])
    facts = {"digest": digest, "compressed_bytes": compressed, "unpacked_bytes": unpacked}
    (out / BUILD_FACTS).write_text(json.dumps(facts, indent=2) + "\n")
    return ImageBuild(
        layout=layout, digest=digest, compressed_bytes=compressed, unpacked_bytes=unpacked
    )


@dataclass(frozen=True)
class PlatformLayers:
    """One platform's layers of a multi-platform image, and what describes its contents."""

    platform: Platform
    layers: Sequence[Layer]
    sbom: Path | None = None
    """An SPDX document of this platform's packages, attached as a referrer."""


SBOM_MEDIA_TYPE = "application/spdx+json"


def _image_spec(
    layers: Sequence[Layer], config: Mapping[str, object], arch: str, created: datetime,
    user: ImageUser, scratch: Path, name: str,
) -> tuple[dict[str, object], int]:  # fmt: skip
    specs, unpacked = [], 0
    for index, layer in enumerate(layers):
        tar = scratch / f"layer-{name}-{index}.tar"
        unpacked += write_layer(layer.tree, tar, user)
        specs.append({"path": str(tar), "created_by": layer.created_by})
    spec: dict[str, object] = {
        "layers": specs,
        "config": dict(config),
        "created": created.isoformat().replace("+00:00", "Z"),
        "os": "linux",
        "architecture": arch,
    }
    return spec, unpacked


def assemble_index(
    out: Path,
    platforms: Sequence[PlatformLayers],
    config: Mapping[str, object],
    user: ImageUser,
    scratch: Path,
    created: datetime,
) -> ImageBuild:
    """Write one image per platform under ``config``, an image index over them (in
    ``platforms``' order) and each platform's SBOM as a referrer of its image, as the OCI
    layout ``out/oci``; the facts go to ``out/build.json``."""
    tool = ocitool()
    progress("writing the layers")
    images, unpacked, sboms = [], [], []
    for position, entry in enumerate(platforms):
        arch = entry.platform.arch
        spec, size = _image_spec(entry.layers, config, arch, created, user, scratch, arch)
        images.append(spec)
        unpacked.append(size)
        if entry.sbom is not None:
            sboms.append({
                "path": str(entry.sbom), "media_type": SBOM_MEDIA_TYPE,
                "title": entry.sbom.name, "image": position,
            })  # fmt: skip
    spec_file = scratch / "index-spec.json"
    spec_file.write_text(json.dumps({"images": images, "sboms": sboms}, indent=2))
    progress(f"assembling the OCI layout (gzip, {len(platforms)} platforms)")
    layout = out / LAYOUT_DIR
    written = json.loads(subprocess.run(
        [str(tool), "assemble-index", "--spec", str(spec_file), "--layout", str(layout)],
        capture_output=True, text=True, check=True,
    ).stdout)  # fmt: skip
    built = []
    for entry, digest, size in zip(platforms, written["images"], unpacked, strict=True):
        manifest = json.loads((layout / "blobs" / "sha256" / digest.split(":", 1)[1]).read_bytes())
        compressed = manifest["config"]["size"] + sum(d["size"] for d in manifest["layers"])
        built.append(PlatformImage(entry.platform.arch, digest, compressed, size))
    image = ImageBuild(
        layout=layout,
        digest=written["index"],
        compressed_bytes=sum(p.compressed_bytes for p in built),
        unpacked_bytes=sum(p.unpacked_bytes for p in built),
        platforms=tuple(built),
    )
    facts = {
        "digest": image.digest,
        "compressed_bytes": image.compressed_bytes,
        "unpacked_bytes": image.unpacked_bytes,
        "platforms": [dataclasses.asdict(p) for p in built],
        "sboms": written["sboms"] or [],
    }
    (out / BUILD_FACTS).write_text(json.dumps(facts, indent=2) + "\n")
    return image
