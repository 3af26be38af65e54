"""``python -m hack.kuberay_e2e build [--force]``: build KubeRay's e2e test binaries
ahead of the real-node tier, which runs in the sandbox and has no network."""

from __future__ import annotations

import sys

from hack.gobuild import build_command
from hack.kuberay_e2e import ensure_built

if __name__ == "__main__":
    sys.exit(
        build_command(
            "python -m hack.kuberay_e2e",
            "Build KubeRay's e2e test binaries (cached).",
            lambda force: ensure_built(force=force),
        )
    )
