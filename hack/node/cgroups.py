"""The cgroups this project makes, each removed when its holder ends: a real node's root,
made before its kubelet starts and removed after it stops, and a test worker's CPU
account (``tests/cputime.py``).

Cgroups are the one thing of a node that no namespace of ours contains: a directory made
under ``/sys/fs/cgroup/<hierarchy>/`` is the machine's. So every node gets a root of its
own in every hierarchy (the kubelet's ``cgroupRoot``, as kind's ``/kubelet``), named after
the process that holds the node's namespaces (``ROOT_PREFIX`` + its pid), and that root
is removed, deepest first, when the node stops. A test worker's account is one cgroup in
the hierarchy that counts CPU, named after the worker (``ACCOUNT_PREFIX`` + its pid). A
cgroup whose holder is dead is removed by the next ``sweep()``: a node's start, its stop,
and the sandbox's exit call it, so even a run killed outright leaves nothing behind once
the sandbox exits or the next node starts.

Standard library only: the sandbox's outer process imports it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Final, NamedTuple

CGROUP_FS: Final = Path("/sys/fs/cgroup")
ROOT_PREFIX: Final = "pulumi-ray-node-"
ACCOUNT_PREFIX: Final = "pulumi-ray-tests-"
PREFIXES: Final = (ROOT_PREFIX, ACCOUNT_PREFIX)
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


NODE_CPU_WEIGHT: Final = 4
"""How many processes' worth of CPU a node's root weighs against the processes beside it
(cgroup v1's ``cpu.shares``, 1024 each; v2's ``cpu.weight``, 100 each). The kubelet
weighs the pods inside the root by their requests, but the root itself competes with
every process at the machine's top level, and by default as one of them: under
``make test`` (load average 7 on two cores) the Ray pods got a seventh of the CPU they
could use, and the real node's tier, which one worker runs from the start of the run to
its end, set the run's length (1,180 s of 1,191). Four lets the pods take what their
limits allow when they want it; the other workers take the rest, so the CPU the run uses
is the same."""


def create_root(name: str) -> list[Path]:
    """``/<name>`` in every hierarchy; cpuset's gets its parent's CPUs and memory nodes,
    without which no process may join it, and the CPU controller's weight gets
    ``NODE_CPU_WEIGHT``."""
    made = []
    for hierarchy in hierarchies():
        root = hierarchy / name
        root.mkdir(exist_ok=True)
        made.append(root)
        for setting in ("cpuset.cpus", "cpuset.mems"):
            inherited = hierarchy / setting
            if inherited.is_file():
                (root / setting).write_text(inherited.read_text())
        for setting, one_process in (("cpu.shares", 1024), ("cpu.weight", 100)):
            # cpu.weight exists only where v2's cpu controller is enabled for the root.
            if (root / setting).is_file():
                (root / setting).write_text(f"{NODE_CPU_WEIGHT * one_process}\n")
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
    return [failure for h in hierarchies() for failure in _remove(h / name)]


def _remove(top: Path) -> list[str]:
    """Kill what is left in ``top`` and the cgroups under it and remove them, deepest
    first; what could not be removed."""
    failures = []
    for group in _deepest_first(top):
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


def cpu_hierarchy() -> Path | None:
    """The hierarchy that counts each cgroup's CPU: cgroup v1's ``cpuacct``, else v2's
    (the hybrid layout's ``unified``, or the whole tree); None without one."""
    for hierarchy in (CGROUP_FS / "cpuacct", CGROUP_FS / "unified", CGROUP_FS):
        if cpu_seconds(hierarchy) is not None:
            return hierarchy
    return None


def cpu_seconds(group: Path) -> float | None:
    """The CPU seconds ``group``'s processes have used, its child groups' included, since
    it was made; None once it is gone."""
    with contextlib.suppress(OSError, ValueError):
        return int((group / "cpuacct.usage").read_text()) / 1e9
    with contextlib.suppress(OSError, ValueError):
        for line in (group / "cpu.stat").read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "usage_usec":
                return int(value) / 1e6
    return None


def group_of(pid: int, hierarchy: Path) -> Path | None:
    """The cgroup ``pid`` is in, in ``hierarchy`` (``/proc/PID/cgroup``: cgroup v1's line
    names the hierarchy's controllers, v2's has none); None once it is gone."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    # v2's hierarchy has cgroup.controllers and its line is "0::PATH".
    v2 = (hierarchy / "cgroup.controllers").is_file()
    wanted = set() if v2 else set(hierarchy.name.split(","))
    for line in lines:
        _number, controllers, path = line.split(":", 2)
        if set(filter(None, controllers.split(","))) == wanted:
            return hierarchy / path.lstrip("/")
    return None


class Account(NamedTuple):
    """A test worker's CPU account: its cgroup, in ``hierarchy`` (``cpu_hierarchy()``)."""

    group: Path
    hierarchy: Path


def open_account(pid: int) -> Account | None:
    """Make ``pid``'s CPU account in ``cpu_hierarchy()`` and move ``pid`` into it, so that
    every process it starts from now on is counted there, wherever it is reparented; None
    where no hierarchy counts CPU or no cgroup may be made here. The account is made in
    the cgroup ``pid`` is in, so that a test run started by another (a pytest a test
    starts) is still counted in that one's account too."""
    hierarchy = cpu_hierarchy()
    if hierarchy is None or (current := group_of(pid, hierarchy)) is None:
        return None
    group = current / f"{ACCOUNT_PREFIX}{pid}"
    try:
        group.mkdir(exist_ok=True)
        (group / "cgroup.procs").write_text(str(pid))
    except OSError:
        with contextlib.suppress(OSError):
            group.rmdir()
        return None
    return Account(group, hierarchy)


def close_account(account: Account, pid: int) -> None:
    """Move ``pid``, which is about to exit, back to the cgroup its account was made in
    and remove the account; one that still holds a process ``pid`` left running stays, for
    the sandbox's exit to sweep (or, nested in another, for that one's removal)."""
    with contextlib.suppress(OSError):
        (account.group.parent / "cgroup.procs").write_text(str(pid))
        account.group.rmdir()


def holder(name: str) -> int | None:
    """The pid a node root's or a test account's name carries (``root_name``,
    ``open_account``); None for any other name."""
    pid_text = next((name.removeprefix(p) for p in PREFIXES if name.startswith(p)), "")
    return int(pid_text) if pid_text.isdigit() else None


def _holder_alive(name: str) -> bool:
    if (pid := holder(name)) is None:
        return True  # not ours to judge
    try:
        os.kill(pid, 0)
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
    """Remove the nodes' roots and the tests' accounts whose holder is dead, after
    waiting up to ``holders_grace`` seconds for the ``awaited`` node holders to die (a
    sandbox's exit: its own nodes' holders were SIGKILLed with their parent a moment
    ago; another sandbox's live node is not waited for); what could not be removed."""
    waited = {root_name(pid) for pid in awaited}
    deadline = time.monotonic() + holders_grace
    while any(map(_holder_alive, waited)) and time.monotonic() < deadline:
        time.sleep(0.05)
    failures = []
    for group in _ours():
        if not _holder_alive(group.name):
            failures += _remove(group)
    return failures


def leftovers() -> list[Path]:
    """The node roots and test accounts on the machine: those directly under a hierarchy
    (what is nested in one goes with it)."""
    return sorted(path for h in hierarchies() for p in PREFIXES for path in h.glob(f"{p}*"))


def orphans() -> list[Path]:
    """Those of ``leftovers()`` whose holder is dead: what the next ``sweep()`` removes,
    and what a run that left something behind would leave. (Another run's live worker or
    node, in a sandbox of its own on the same machine, is in ``leftovers()`` too.)"""
    return [group for group in leftovers() if not _holder_alive(group.name)]


def _ours() -> list[Path]:
    """``leftovers()`` and the test accounts nested in them (a pytest run a test started
    makes its account in the test's), each after what it is nested in."""
    tops = leftovers()
    nested = [
        Path(directory, name)
        for top in tops
        if top.name.startswith(ACCOUNT_PREFIX)
        for directory, subdirectories, _files in os.walk(top)
        for name in subdirectories
        if name.startswith(ACCOUNT_PREFIX)
    ]
    return sorted(tops + nested)
