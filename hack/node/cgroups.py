"""The real node's cgroup root, made before its kubelet starts and removed after it stops.

Cgroups are the one thing of a node that no namespace of ours contains: a directory made
under ``/sys/fs/cgroup/<hierarchy>/`` is the machine's. So every node gets a root of its
own in every hierarchy (the kubelet's ``cgroupRoot``, as kind's ``/kubelet``), named after
the process that holds the node's namespaces (``ROOT_PREFIX`` + its pid), and that root
is removed, deepest first, when the node stops. A root whose holder is dead is removed by
the next ``sweep()``: the node's start, its stop, and the sandbox's exit call it, so even a
run killed outright leaves nothing behind once the sandbox exits or the next node starts.

Standard library only: the sandbox's outer process imports it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Final

CGROUP_FS: Final = Path("/sys/fs/cgroup")
ROOT_PREFIX: Final = "pulumi-ray-node-"
EMPTY_WAIT_SECONDS: Final = 30.0
"""How long a removal waits for the kernel to finish killed processes off (a SIGKILLed
process leaves its cgroup only once it has exited; under load that takes a moment)."""


def root_name(holder_pid: int) -> str:
    return f"{ROOT_PREFIX}{holder_pid}"


def hierarchies() -> list[Path]:
    """Every mounted hierarchy under ``/sys/fs/cgroup`` (cgroup v1's controllers, the
    named ``systemd`` one and the hybrid ``unified`` v2 one): the kubelet and runc make
    cgroups in each of them."""
    if not CGROUP_FS.is_dir():
        return []
    return sorted(path for path in CGROUP_FS.iterdir() if (path / "cgroup.procs").is_file())


def create_root(name: str) -> list[Path]:
    """``/<name>`` in every hierarchy; cpuset's gets its parent's CPUs and memory nodes,
    without which no process may join it."""
    made = []
    for hierarchy in hierarchies():
        root = hierarchy / name
        root.mkdir(exist_ok=True)
        made.append(root)
        for setting in ("cpuset.cpus", "cpuset.mems"):
            inherited = hierarchy / setting
            if inherited.is_file():
                (root / setting).write_text(inherited.read_text())
    return made


def _deepest_first(root: Path) -> Iterator[Path]:
    for directory, subdirectories, _files in os.walk(root, topdown=False):
        del subdirectories
        yield Path(directory)


def _members(group: Path) -> list[int]:
    try:
        return [int(pid) for pid in (group / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def remove_root(name: str) -> list[str]:
    """Kill what is left in ``/<name>`` of every hierarchy and remove it, deepest first;
    what could not be removed (empty when all went well)."""
    failures = []
    for hierarchy in hierarchies():
        root = hierarchy / name
        if not root.is_dir():
            continue
        for group in _deepest_first(root):
            deadline = time.monotonic() + EMPTY_WAIT_SECONDS
            while members := _members(group):
                for pid in members:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                if time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            try:
                group.rmdir()
            except FileNotFoundError:
                pass
            except OSError as error:
                failures.append(f"{group}: {error.strerror}")
    return failures


def _holder_alive(name: str) -> bool:
    pid_text = name.removeprefix(ROOT_PREFIX)
    if not pid_text.isdigit():
        return True  # not ours to judge
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


HOLDERS_FILE = "real-node.holders"
"""In a sandbox's directory: the holder pid of each node started in that sandbox, a line
each, so the sandbox's exit waits for its own nodes' holders and no other's."""


def record_holder(sandbox_dir: Path, holder_pid: int) -> None:
    with (sandbox_dir / HOLDERS_FILE).open("a") as holders:
        holders.write(f"{holder_pid}\n")


def recorded_holders(sandbox_dir: Path) -> set[int]:
    try:
        return {int(line) for line in (sandbox_dir / HOLDERS_FILE).read_text().split()}
    except FileNotFoundError:
        return set()


def sweep(*, awaited: Collection[int] = (), holders_grace: float = 0.0) -> list[str]:
    """Remove the roots of nodes whose holder is dead, after waiting up to
    ``holders_grace`` seconds for the ``awaited`` holders to die (a sandbox's exit: its
    own nodes' holders were SIGKILLed with their parent a moment ago; another sandbox's
    live node is not waited for); what could not be removed."""
    names = {
        path.name
        for hierarchy in hierarchies()
        for path in hierarchy.glob(f"{ROOT_PREFIX}*")
        if path.is_dir()
    }
    waited = {root_name(pid) for pid in awaited}
    deadline = time.monotonic() + holders_grace
    while any(map(_holder_alive, waited)) and time.monotonic() < deadline:
        time.sleep(0.05)
    failures = []
    for name in sorted(names):
        if not _holder_alive(name):
            failures += remove_root(name)
    return failures


def leftovers() -> list[Path]:
    """Every node root still present in any hierarchy (for tests: none after a stop)."""
    return sorted(path for h in hierarchies() for path in h.glob(f"{ROOT_PREFIX}*"))
