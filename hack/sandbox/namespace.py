"""Entering the sandbox: a new network and mount namespace, set up, then the command.

The outer process (``enter``) checks that namespaces can be made, creates a scratch
directory and runs ``unshare`` on this same module with ``--inside``; it forwards
signals, waits, kills whatever the command left running in the sandbox's network
namespace, and removes the scratch directory. The inner process (``set_up``), now
in the new namespaces and root there, brings loopback up, routes kwok's ranges to it,
shadows ``/etc/hosts`` and ``/etc/resolv.conf`` with private files, and then becomes
the command (``exec``), so the command's exit code is the sandbox's.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from hack.localcluster.cluster import NODE_IP, POD_CIDR, SERVICE_CLUSTER_IP_RANGE
from hack.node import cgroups
from hack.processes import KILLED_WAIT, age, command_line, killed_with_parent, pid_alive, pids
from hack.sandbox import DIR_ENV, HOSTS_FILE, NETNS_ENV

ROUTED_TO_LOOPBACK = (POD_CIDR, f"{NODE_IP}/32", SERVICE_CLUSTER_IP_RANGE)
"""kwok's pod range, its node's address (inside the pod range today, routed on its own
so that stays true if either moves) and the service range."""

RESOLV_CONF = Path("/etc/resolv.conf")
_MS_RDONLY, _MS_REMOUNT, _MS_BIND = 0x1, 0x20, 0x1000
_FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_NETNS_FILE = "netns"
"""In the scratch directory: the sandbox's network namespace, written from inside."""


class SandboxUnavailable(RuntimeError):
    """This machine cannot make the namespaces the sandbox needs."""


def unshare_command() -> list[str]:
    """``unshare`` with the flags this user needs for a network and mount namespace."""
    if shutil.which("unshare") is None:
        raise SandboxUnavailable("`unshare` is missing: install util-linux")
    if os.geteuid() == 0:
        return ["unshare", "--net", "--mount"]
    # An ordinary user becomes root of a new user namespace, which may own the others.
    return ["unshare", "--user", "--map-root-user", "--net", "--mount"]


def check_available() -> None:
    """Fail with one line naming what is missing, before anything else is started."""
    command = unshare_command()
    if shutil.which("ip") is None:
        raise SandboxUnavailable("`ip` is missing: install iproute2")
    probe = subprocess.run([*command, "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        reason = probe.stderr.strip().splitlines()[-1] if probe.stderr.strip() else "no reason"
        raise SandboxUnavailable(
            f"`{' '.join(command)}` failed ({reason}); run as root, or enable unprivileged "
            "user namespaces (sysctl kernel.unprivileged_userns_clone=1 / "
            "user.max_user_namespaces > 0)"
        )


def enter(inner_arguments: Sequence[str]) -> int:
    """Run ``python -m hack.sandbox --inside INNER_ARGUMENTS`` in new namespaces."""
    check_available()
    scratch = Path(tempfile.mkdtemp(prefix="pulumi-ray-sandbox-"))
    command = [
        *unshare_command(),
        "--",
        sys.executable,
        "-m",
        "hack.sandbox",
        "--inside",
        str(scratch),
        *inner_arguments,
    ]
    repo_root = Path(__file__).resolve().parents[2]
    # `hack` is not an installed package: the inner interpreter finds it from here.
    python_path = os.pathsep.join(filter(None, [str(repo_root), os.environ.get("PYTHONPATH")]))
    try:
        # The command dies with this process: a sandbox killed outright (a CI timeout, a
        # test's teardown) takes what it runs, and a real node's, along with it.
        process = subprocess.Popen(command, env={**os.environ, "PYTHONPATH": python_path},
                                   preexec_fn=killed_with_parent)  # fmt: skip
        previous = {
            number: signal.signal(number, lambda received, _frame: process.send_signal(received))
            for number in _FORWARDED_SIGNALS
        }
        try:
            return process.wait()
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)
    finally:
        _kill_left_behind(scratch)
        # A real node's processes died with the sandbox's namespaces; its cgroups are
        # the machine's and stay unless removed (hack/node/cgroups.py).
        own = cgroups.recorded_holders(scratch)
        for failure in cgroups.sweep(awaited=own, holders_grace=10.0):
            print(f"sandbox: could not remove a real node's cgroup: {failure}", file=sys.stderr)
        shutil.rmtree(scratch, ignore_errors=True)


def _kill_left_behind(scratch: Path) -> None:
    """SIGKILL every process still in the sandbox's network namespace once its command
    has exited, and say which.

    The sandbox has no PID namespace of its own, so a process the command started and
    did not stop outlives it: a pytest ended by SIGTERM runs no fixture teardown, and
    the Ray heads and Pulumi plugins its tests started were found re-parented to PID 1.
    Every process started inside shares the namespace (a real node's pods have their
    own, and die with the node's init when its parent here is killed)."""
    try:
        netns = (scratch / _NETNS_FILE).read_text()
    except OSError:
        return  # the command never got inside: nothing can be in the namespace
    killed: dict[int, str] = {}
    deadline = time.monotonic() + KILLED_WAIT
    while left := _in_network_namespace(netns):
        if time.monotonic() > deadline:
            print(f"sandbox: still running after SIGKILL: {sorted(left.values())}",
                  file=sys.stderr)  # fmt: skip
            break
        for pid, name in left.items():
            # One whose first thread has exited but not its others still reads as in
            # the namespace (Ray's dashboard modules, their parent just killed): it is
            # killed to be sure, but not named, since it was on its way out already.
            described = _described(pid, name) if pid_alive(pid) else None
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                continue
            if described:
                killed[pid] = described
        time.sleep(0.1)
    if killed:
        print(f"sandbox: killed {len(killed)} process(es) its command left running: "
              f"{'; '.join(killed[pid] for pid in sorted(killed))}", file=sys.stderr)  # fmt: skip


DESCRIBED_COMMAND = 300
"""How much of a left-behind process's command line the sandbox prints."""


def _described(pid: int, name: str) -> str:
    """``name (pid N, up S s: its command line)``: what it ran (``python`` alone says
    little) and its age, to match against the tests' times to find which left it."""
    command = command_line(pid).strip() or "?"
    if len(command) > DESCRIBED_COMMAND:
        command = command[:DESCRIBED_COMMAND] + "..."
    up = "" if (seconds := age(pid)) is None else f", up {seconds:.0f} s"
    return f"{name} (pid {pid}{up}: {command})"


def _in_network_namespace(netns: str) -> dict[int, str]:
    """The live processes in ``netns`` (a zombie has no namespace links), by pid, each
    with its command name."""
    found = {}
    for pid in pids():
        if pid == os.getpid():
            continue
        try:
            if os.readlink(f"/proc/{pid}/ns/net") == netns:
                found[pid] = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            continue  # gone, or not ours to read
    return found


def set_up(scratch: Path) -> None:
    """Inside the new namespaces: network, private files, and the marker variables."""
    _ip("link", "set", "lo", "up")
    for network in ROUTED_TO_LOOPBACK:
        _ip("route", "add", "local", network, "dev", "lo")
    # Shadow the machine's files for this mount namespace only. The machine's hosts file
    # stays readable (read-only) in the scratch directory, for comparison and debugging.
    private_hosts, machine_view = scratch / "hosts", scratch / "machine-hosts"
    shutil.copyfile(HOSTS_FILE, private_hosts)
    machine_view.touch()
    _bind(HOSTS_FILE, machine_view, read_only=True)
    _bind(private_hosts, HOSTS_FILE)
    # No name server is reachable; an empty resolver config makes a lookup of a name
    # missing from /etc/hosts fail at once rather than after a resolver timeout.
    private_resolv = scratch / "resolv.conf"
    private_resolv.write_text("# the pulumi-ray sandbox has no DNS: names live in /etc/hosts\n")
    if RESOLV_CONF.exists():
        _bind(private_resolv, RESOLV_CONF)
    netns = os.readlink("/proc/self/ns/net")
    (scratch / _NETNS_FILE).write_text(netns)
    os.environ[NETNS_ENV] = netns
    os.environ[DIR_ENV] = str(scratch)


def _ip(*arguments: str) -> None:
    result = subprocess.run(["ip", *arguments], capture_output=True, text=True)
    if result.returncode != 0:
        raise SandboxUnavailable(f"`ip {' '.join(arguments)}` failed: {result.stderr.strip()}")


def _bind(source: Path, target: Path, *, read_only: bool = False) -> None:
    # mount(2) directly: one bind needs no `mount` binary and reports errno plainly.
    libc = ctypes.CDLL(None, use_errno=True)
    flags = _MS_BIND
    if libc.mount(str(source).encode(), str(target).encode(), None, flags, None) != 0:
        raise SandboxUnavailable(f"bind {source} -> {target}: {os.strerror(ctypes.get_errno())}")
    if read_only:
        flags |= _MS_REMOUNT | _MS_RDONLY
        if libc.mount(None, str(target).encode(), None, flags, None) != 0:
            errno = ctypes.get_errno()
            raise SandboxUnavailable(f"read-only {target}: {os.strerror(errno)}")
