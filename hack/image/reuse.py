"""An image build kept in the build cache and copied out when nothing it is made of has
changed. The Ray images use it, and so does the operator's, whose key adds what only it
holds (``hack/image/build.py`` ``recipe_facts``: ``operator_runtime``'s files, the
project's metadata and pins, and the commit it is labelled and dated by); the Redis image
builds in a second, so it is not worth a copy.

The key is every file of the image machinery (``hack/image``, its locks included) and the
facts the caller adds (the date the image is stamped with, the release it is built for):
conservative, so any change to how images are made builds again. What the cache holds is
checked as the build's own output is: ``make test``'s image tests assemble the image again
from the cached inputs and compare digests with the one ``make`` left in ``dist/``.

A warm clean-clone run copied the Ray image (178 MB) in under a second where building
it took 22 s; a warm ``make test`` of an unchanged checkout copies the operator's where
building both its platforms took 20 s before the tests could start.

A new commit changes the operator image's key (its label names the commit), but not what
its two larger layers hold: ``make image`` takes those trees, the Debian base and the
Python dependencies of each platform, from the cache too (``kept_tree``), and builds in
6 s where it took 20.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from hack import gobuild
from hack.image import BUILD_FACTS, LAYOUT_DIR, ImageBuild
from hack.image.oci import progress

MACHINERY = Path(__file__).resolve().parent
"""``hack/image``: every file under it keys the cache."""
KEPT = (LAYOUT_DIR, BUILD_FACTS)
"""What a build leaves in its dist directory that the cache keeps by default (tests add
more there: the unpacked root filesystems)."""


def recipe_key(*facts: str) -> str:
    """A digest of the machinery's files (path and bytes, in path order) and ``facts``."""
    digest = hashlib.sha256()
    for path in sorted(p for p in MACHINERY.rglob("*") if p.is_file()):
        if "__pycache__" in path.parts:
            continue
        digest.update(str(path.relative_to(MACHINERY)).encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    for fact in facts:
        digest.update(fact.encode() + b"\0")
    return digest.hexdigest()[:16]


def built_or_reused(
    name: str,
    dist_dir: Path,
    key: str,
    build: Callable[[], ImageBuild],
    read: Callable[[], ImageBuild],
    parts: Sequence[str] = KEPT,
) -> ImageBuild:
    """``read()`` of ``dist_dir`` after copying a build kept under ``key`` into it, or
    ``build()`` into it and keep a copy (its ``parts``) in place of any older one
    (``_keep``: one kept build per image, each some 180 MB)."""
    kind = f"{name}-built-"
    kept = _entry(kind, key)
    if all((kept / part).exists() for part in parts):
        for part in parts:
            _replace(kept / part, dist_dir / part)
        progress(f"reused the build kept in {kept} (its recipe and inputs are unchanged)")
        return read()
    image = build()
    shutil.rmtree(kept, ignore_errors=True)  # an entry without every part (older parts)

    def copy(partial: Path) -> None:
        for part in parts:
            _replace(dist_dir / part, partial / part)

    _keep(kind, kept, copy)
    return image


def kept_tree(name: str, key: str, make: Callable[[Path], None]) -> Path:
    """A tree kept in the build cache under ``name`` and ``key``, made by ``make(path)``
    if it is not there yet, in place of an older key's (``_keep``: the operator's
    dependency trees are some 150 MB a platform); the caller only reads it."""
    kind = f"{name}-tree-"
    kept = _entry(kind, key)
    if kept.is_dir():
        progress(f"reused {kept.name} (its recipe and inputs are unchanged)")
    else:
        _keep(kind, kept, make)
    return kept


def _entry(kind: str, key: str) -> Path:
    """Where the cache keeps the entry of ``kind`` (a name's prefix) under ``key``."""
    return gobuild.cache_root() / "image" / f"{kind}{key}"


PARTIAL = ".partial-"


def _keep(kind: str, kept: Path, fill: Callable[[Path], None]) -> None:
    """Make the cache entry ``kept`` whole or not at all, and remove the other entries of
    its ``kind`` (older keys'). ``fill`` writes a new directory beside it, which is
    then renamed into place: a build stopped midway leaves no entry, and of two builds at
    once (a CI clone beside a checkout, sharing one cache) the first to finish keeps its
    own and neither removes the other's work."""
    kept.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f"{kept.name}{PARTIAL}", dir=kept.parent))
    try:
        fill(partial / "entry")
        try:
            (partial / "entry").rename(kept)
        except OSError:
            if not kept.is_dir():
                raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    for older in kept.parent.glob(f"{kind}*"):
        if older != kept and PARTIAL not in older.name:
            shutil.rmtree(older, ignore_errors=True)


def _replace(source: Path, target: Path) -> None:
    if target.is_dir():
        shutil.rmtree(target)
    elif target.exists():
        target.unlink()
    target.parent.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        shutil.copytree(source, target)
    else:
        shutil.copy2(source, target)
