"""``python -m hack.node build [--force]|kubelet VERSION|lock``: the real node's binaries.

build   build (cached) every binary of the node ahead of the tests (make node), its
        volume provisioner too; prints the directory of the main ones
kubelet build (cached) the kubelet and kube-proxy of another pinned control-plane version
        (make node-1.36: v1.36.3); prints the kubelet's path
lock    pin apt's current candidates of the node's Debian packages in hack/node/debian.lock
        and those of its NetworkPolicy firewall in hack/node/firewall.lock
"""

from __future__ import annotations

import sys

from hack import gobuild
from hack.node import debs
from hack.node.build import ensure_all_built, ensure_kubelet_built
from hack.node.versions import KUBELET_WRAPPERS


def main() -> int:
    if sys.argv[1:2] == ["kubelet"]:
        version = sys.argv[2] if len(sys.argv) == 3 else ""
        if version not in KUBELET_WRAPPERS:
            print(f"usage: python -m hack.node kubelet {{{','.join(KUBELET_WRAPPERS)}}}",
                  file=sys.stderr)  # fmt: skip
            return 2
        print(ensure_kubelet_built(version).path("kubelet"))
        return 0
    if sys.argv[1:] == ["lock"]:
        packages = debs.lock()
        print(f"{debs.LOCK_FILE}: {len(packages)} packages; review and commit it")
        firewall = debs.lock_firewall()
        print(f"{debs.FIREWALL_LOCK_FILE}: {len(firewall)} packages; review and commit it")
        return 0
    return gobuild.build_command(
        "python -m hack.node",
        "Build the real node's binaries (cached); `python -m hack.node lock` re-pins its "
        "Debian packages.",
        ensure_all_built,
    )


if __name__ == "__main__":
    sys.exit(main())
