"""PID 1 of a real node: ``python -m hack.node.init STATE_DIR``.

``node.py`` starts this as the first process of the node's own PID, network and mount
namespaces (``unshare --pid --fork --kill-child --mount-proc --net --mount``), the way a
kind node container starts its entrypoint. Every process of the node (containerd and its
shims, the pods' containers, the kubelet, kube-proxy, CoreDNS) then lives in that PID
namespace, so when this process dies (it is SIGKILLed when the harness that started the
node dies or stops it) the kernel kills all of them: no shim or container outlives the
node, whatever happened to the test that started it.

Before it reports ready it makes the node's mounts, which nothing outside the node sees:

- ``/`` shared, as on a real node (``mount --make-rshared /``), so mounts the kubelet makes
  under its root directory reach the containers that bind them;
- a private tmpfs on ``/run``, for containerd's sockets and state (a short socket path,
  and nothing written to the machine's ``/run``);
- the state directory's ``var`` over ``/var``: the kubelet writes paths no flag moves
  (``/var/lib/kubelet/device-plugins``, ``/var/log/pods``, ``/var/log/containers``), and
  so does libcni (``/var/lib/cni/results``); they land in the state directory, and the
  kubelet's root directory gets a short path (its unix sockets' paths must fit in 108
  bytes, which a pytest temporary directory does not);
- the machine-wide sysctls the kubelet insists on (``KUBELET_TUNABLES``), each shadowed
  by a file that already holds the value it wants. The kubelet reads a value it likes and
  writes nothing, and a write would land in the file: the machine's ``kernel.panic`` and
  friends stay as they were (``tests/node`` compares them before and after).

Then it reaps: the shims daemonize and are reparented to it.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Final

KUBELET_TUNABLES: Final[Mapping[str, str]] = {
    "vm/overcommit_memory": "1",
    "vm/panic_on_oom": "0",
    "kernel/panic": "10",
    "kernel/panic_on_oops": "1",
    "kernel/keys/root_maxkeys": "1000000",
    "kernel/keys/root_maxbytes": "25000000",
}
"""``/proc/sys`` entries the kubelet (v1.34, ``setupKernelTunables``) sets when they differ
from these values, with ``protectKernelDefaults: false``; with ``true`` it refuses to start
unless they already match. None of them is namespaced: written, they change the machine."""

READY_FILE: Final = "init.ready"
"""Written into the state directory once the mounts are made."""

_MS_BIND, _MS_REC, _MS_SHARED = 0x1000, 0x4000, 1 << 20


def _mount(source: str, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    result = libc.mount(
        source.encode(), target.encode(), fstype.encode() if fstype else None, flags,
        data.encode() if data else None,
    )  # fmt: skip
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"mount {source} on {target}: {os.strerror(errno)}")


def make_mounts(state_dir: Path) -> None:
    """The node's private mounts (see the module's docstring)."""
    _mount("none", "/", None, _MS_REC | _MS_SHARED)
    _mount("tmpfs", "/run", "tmpfs", 0, "mode=755,size=64m")
    var = state_dir / "var"
    for directory in ("lib/kubelet", "log", "tmp"):
        (var / directory).mkdir(parents=True, exist_ok=True)
    (var / "tmp").chmod(0o1777)
    if not (var / "run").is_symlink():
        (var / "run").symlink_to("/run")
    _mount(str(var), "/var", None, _MS_BIND)
    values = state_dir / "sysctl"
    values.mkdir(exist_ok=True)
    for entry, value in KUBELET_TUNABLES.items():
        shadow = values / entry.replace("/", ".")
        shadow.write_text(value + "\n")
        _mount(str(shadow), f"/proc/sys/{entry}", None, _MS_BIND)


def reap_forever() -> None:
    """Reap every child until SIGTERM or SIGINT; the signals are waited for, not handled,
    so none is lost between two waits."""
    wanted = {signal.SIGCHLD, signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, wanted)
    while True:
        received = signal.sigwait(wanted)
        if received != signal.SIGCHLD:
            return
        while True:
            try:
                pid, _status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break


def main(argv: list[str]) -> int:
    if len(argv) != 1 or os.getpid() != 1:
        print("usage: python -m hack.node.init STATE_DIR (as PID 1 of a new PID namespace)",
              file=sys.stderr)  # fmt: skip
        return 2
    state_dir = Path(argv[0])
    make_mounts(state_dir)
    (state_dir / READY_FILE).write_text("ready\n")
    reap_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
