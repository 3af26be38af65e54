"""``python -m hack.kuberay build [--force]``: build KubeRay's operator ahead of the tests.

The conformance tests and benchmarks run it inside the sandbox, which has no network, so
``make test`` builds it here first.
"""

from __future__ import annotations

import sys

from hack.gobuild import build_command
from hack.kuberay import ensure_built

if __name__ == "__main__":
    sys.exit(
        build_command(
            "python -m hack.kuberay",
            "Build KubeRay's ray-operator (cached).",
            lambda force: ensure_built(force=force),
        )
    )
