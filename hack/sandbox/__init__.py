"""A private network for tests, the demo and the benchmarks: kwok's made-up addresses
lead to this machine, and nothing can leave it.

``python -m hack.sandbox -- CMD ...`` runs CMD in a new network and mount namespace
(``namespace.py``) where loopback is up, kwok's pod range, node IP and service range are
routed to the loopback device, nothing else is routed at all, and ``/etc/hosts`` is a
private writable copy. A dial to a kwok pod's IP then reaches a listener of this machine
bound to all addresses (a real Ray head, a test's HTTP server), and a forgotten dial to
anything else fails at once with "Network is unreachable" instead of leaving. When CMD
ends, whatever it left running in the namespace is killed.

This module is the part everything else imports (the pytest guard, the control plane,
the Go builds), so it stands on the standard library alone.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

__all__ = [
    "DIR_ENV",
    "NETNS_ENV",
    "OutsideSandbox",
    "add_host",
    "exit_unless_inside",
    "fixed_ports",
    "hosts_file",
    "inside",
    "machine_hosts_file",
    "remove_host",
    "require_inside",
]

NETNS_ENV = "PULUMI_RAY_SANDBOX_NETNS"
"""The network namespace the sandbox created (``net:[inode]``), set for its command."""

DIR_ENV = "PULUMI_RAY_SANDBOX_DIR"
"""The sandbox's scratch directory: the private hosts file and a view of the machine's."""

HOSTS_FILE = Path("/etc/hosts")
_HOSTS_MARK = "# added in the pulumi-ray sandbox"


class OutsideSandbox(RuntimeError):
    """Something that may dial kwok's addresses was started outside the sandbox."""


def _current_netns() -> str:
    return os.readlink("/proc/self/ns/net")


def _has_default_route() -> bool:
    # /proc/net/route lists the main IPv4 table; a default route has destination 0.
    with open("/proc/net/route") as table:
        next(table, None)
        return any(line.split()[1] == "00000000" for line in table if line.strip())


def inside() -> bool:
    """Whether this process runs in the namespace ``python -m hack.sandbox`` made.

    The environment names the namespace the sandbox created; a process that merely
    inherited the variable elsewhere (or in a namespace with a way out) does not count.
    """
    expected = os.environ.get(NETNS_ENV)
    if not expected:
        return False
    try:
        return _current_netns() == expected and not _has_default_route()
    except OSError:
        return False


def require_inside(what: str) -> None:
    """Refuse to go on outside the sandbox, naming how to get in."""
    if not inside():
        raise OutsideSandbox(
            f"{what} must run inside the sandbox, where kwok's addresses lead to this machine "
            "and nothing else is reachable: use `make test` / `make demo`, or "
            "`python -m hack.sandbox -- COMMAND` (`python -m hack.sandbox --shell` for a shell)"
        )


def exit_unless_inside(what: str) -> None:
    """For command-line entry points: the refusal as one line on stderr and exit 2."""
    try:
        require_inside(what)
    except OutsideSandbox as refusal:
        print(f"error: {refusal}", file=sys.stderr)
        raise SystemExit(2) from None


@contextlib.contextmanager
def fixed_ports(*ports: int) -> Iterator[None]:
    """Hold ``ports`` against the other processes of this sandbox until the block ends.

    The sandbox's processes (pytest-xdist's workers) share one network namespace, so two
    tests that must bind the same fixed port (the operator Deployment's ``:8080`` and
    ``:8082``) take turns instead of failing with "Address already in use"."""
    require_inside("binding fixed ports")
    with contextlib.ExitStack() as held:
        for port in sorted(set(ports)):  # one order everywhere: no deadlock
            lock = held.enter_context(open(Path(os.environ[DIR_ENV]) / f"port-{port}.lock", "w"))
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def hosts_file() -> Path:
    """The hosts file this sandbox resolves names with (its private copy)."""
    require_inside("editing the sandbox's /etc/hosts")
    return HOSTS_FILE


def machine_hosts_file() -> Path:
    """A read-only view of the machine's own ``/etc/hosts``, which the sandbox shadows."""
    require_inside("reading the machine's hosts file")
    return Path(os.environ[DIR_ENV]) / "machine-hosts"


def add_host(name: str, address: str) -> None:
    """Map ``name`` to ``address`` for every process in this sandbox (and only there)."""
    with _hosts_locked() as hosts:
        kept = [line for line in hosts.read().splitlines() if not _names(line, name)]
        _rewrite(hosts, [*kept, f"{address}\t{name}\t{_HOSTS_MARK}"])


def remove_host(name: str) -> None:
    """Forget a mapping that :func:`add_host` made."""
    with _hosts_locked() as hosts:
        _rewrite(hosts, [line for line in hosts.read().splitlines() if not _names(line, name)])


@contextlib.contextmanager
def _hosts_locked() -> Iterator[TextIO]:
    """The hosts file, open for update under an exclusive lock: the test processes of one
    session (pytest-xdist's workers) edit it side by side."""
    with open(hosts_file(), "r+") as hosts:
        fcntl.flock(hosts, fcntl.LOCK_EX)
        yield hosts  # closing the file releases the lock


def _rewrite(hosts: TextIO, lines: list[str]) -> None:
    # In place: the file is a bind mount, which a rename would not replace.
    hosts.seek(0)
    hosts.write("\n".join(lines) + "\n")
    hosts.truncate()


def _names(line: str, name: str) -> bool:
    return line.endswith(_HOSTS_MARK) and name in line.split("#", 1)[0].split()[1:]
