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

from typing import Final

from hack.image import REPO_ROOT, ImageBuild, read_build

__all__ = ["DIST_DIR", "RAY_IMAGE", "RAY_VERSION", "built"]

RAY_VERSION: Final = "2.52.1"
"""constraints.txt's ray pin (the build refuses a lock or constraints that disagree)."""
RAY_IMAGE: Final = f"rayproject/ray:{RAY_VERSION}"
"""The reference the node loads the image under and Ray pods ask for: Ray's published
image's name, given to this stand-in so that pod specs read as they would upstream."""
DIST_DIR: Final = REPO_ROOT / "dist" / "ray-image"
"""What ``make ray-image`` writes: ``oci/`` (the OCI layout) and ``build.json``."""
MAKE_COMMAND: Final = "make ray-image"


def built() -> ImageBuild:
    """The image ``make ray-image`` produced, checked against its layout's index."""
    return read_build(DIST_DIR, "Ray image", MAKE_COMMAND)
