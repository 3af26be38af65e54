"""``python -m hack.kueue build [--force]``: build Kueue ahead of the batch tests.

They run it inside the sandbox, which has no network, so ``make kueue`` builds it here
first.
"""

from __future__ import annotations

import sys

from hack.gobuild import build_command
from hack.kueue import ensure_built

if __name__ == "__main__":
    sys.exit(
        build_command(
            "python -m hack.kueue",
            "Build Kueue's controller manager (cached).",
            lambda force: ensure_built(force=force),
        )
    )
