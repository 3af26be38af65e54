"""The Redis image the real node's GCS fault-tolerance scenarios run (``make
redis-image``): Debian bookworm's ``redis-server`` and ``redis-tools`` (for
``redis-cli``), extracted from pinned .debs, not Redis's published image.

A shell (dash, as ``/bin/sh``: manifests such as KubeRay's samples start the server
with ``sh -c``) and no init: the image config's command is ``redis-server`` with the
defaults a config file would otherwise change (no daemonizing, every address); a pod
adds ``--requirepass`` and the like as args. ``redis-server`` first on PATH is a
wrapper that gives the server Redis's own image's default of protected mode off
(Debian's is on, and refuses every remote client while no password is set). It runs as
``redis`` (999:999, the uid Redis's own image uses) in ``/data``, its home and
redis-server's working directory, where a snapshot would go, as in Redis's own image.
One layer: the Debian packages.

The machinery is the operator image's (``hack.image``: ``debian``, ``oci``); this
package holds only what differs. The node loads the image under ``REDIS_IMAGE``.
"""

from __future__ import annotations

from typing import Final

from hack.image import REPO_ROOT, ImageBuild, read_build

__all__ = ["DIST_DIR", "REDIS_IMAGE", "REDIS_VERSION", "built"]

REDIS_VERSION: Final = "7.0.15"
"""The upstream version of the locked redis-server (the build refuses a lock that
disagrees)."""
REDIS_IMAGE: Final = f"redis:{REDIS_VERSION}"
"""The reference the node loads the image under and Redis pods ask for: Redis's
published image's name, given to this stand-in so that pod specs read as upstream's."""
DIST_DIR: Final = REPO_ROOT / "dist" / "redis-image"
"""What ``make redis-image`` writes: ``oci/`` (the OCI layout) and ``build.json``."""
MAKE_COMMAND: Final = "make redis-image"


def built() -> ImageBuild:
    """The image ``make redis-image`` produced, checked against its layout's index."""
    return read_build(DIST_DIR, "Redis image", MAKE_COMMAND)
