"""``python -m hack.certmanager build [--force]``: build cert-manager ahead of the mTLS tests.

They run it inside the sandbox, which has no network, so ``make cert-manager`` builds it
here first.
"""

from __future__ import annotations

import sys

from hack.certmanager import ensure_built
from hack.gobuild import build_command

if __name__ == "__main__":
    sys.exit(
        build_command(
            "python -m hack.certmanager",
            "Build cert-manager's certificate and issuer controllers (cached).",
            lambda force: ensure_built(force=force),
        )
    )
