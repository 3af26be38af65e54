"""Processes the way every harness here runs them.

``stop``: SIGTERM, a grace period for it to finish what it was doing (an operator
releasing its lease, Kueue its webhooks), then SIGKILL. ``Spec`` and ``Supervisor``: one
shape for a harness's processes (what to run, its log, when it is ready, how long it
gets to stop), started in order and stopped in reverse.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Process = tuple[int, int]
"""A process as ``/proc`` tells it apart from a later one of the same pid: (pid, start
time in clock ticks since boot)."""

TICK = os.sysconf("SC_CLK_TCK")
"""Clock ticks a second: the unit of the times in ``/proc/PID/stat``."""

KILLED_WAIT = 30.0
"""Seconds a SIGKILLed process may take to be reaped (it cannot refuse; a bound all the
same)."""


def stop(process: subprocess.Popen[Any], grace: float) -> int:
    """Stop ``process`` if it still runs (SIGTERM, ``grace`` seconds, SIGKILL) and reap it;
    its exit status."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=KILLED_WAIT)
    return process.returncode


def http_ok(url: str, *, context: ssl.SSLContext | None = None) -> bool:
    """Whether ``url`` answers 200 within two seconds: the readiness check of a process
    with a health endpoint (``Spec.ready``)."""
    try:
        with urllib.request.urlopen(url, timeout=2, context=context) as response:
            return bool(response.status == 200)
    except (OSError, urllib.error.HTTPError):
        return False


# -- one shape for every process a harness starts ------------------------------------------
#
# envtest's process.State is the model: what to run (argv, environment, directory), where
# its output goes, how to tell it is ready and within what time, and how long it gets to
# stop. A Supervisor starts such processes in order, fails naming the log of whichever
# exits while it waits, and stops them in reverse.


@dataclass(frozen=True)
class Spec:
    """One process of a harness."""

    name: str
    argv: Sequence[str]
    log: Path
    """Its stdout and stderr, appended to (a restart adds to the same file)."""
    env: Mapping[str, str] | None = None
    """Its whole environment; None inherits this process's."""
    cwd: Path | None = None
    ready: Callable[[], bool] | None = None
    """True once it serves; None: ready when started."""
    ready_timeout: float = 90.0
    grace: float = 10.0
    """SIGTERM to SIGKILL when stopped."""
    die_with_parent: bool = True
    """The kernel kills it when the thread that started it exits (``PR_SET_PDEATHSIG``):
    a killed test session leaves it no time to outlive it."""


_PR_SET_PDEATHSIG = 1


def killed_with_parent() -> None:
    """A ``preexec_fn``: the kernel SIGKILLs the child when the thread that started it
    exits (Linux only; it holds across ``execve`` of anything not setuid)."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


@dataclass
class Running:
    """A started ``Spec``: its process, or, for a process started elsewhere (``adopt``),
    its pid alone."""

    spec: Spec
    process: subprocess.Popen[bytes] | None
    pid: int

    def alive(self) -> bool:
        if self.process is not None:
            return self.process.poll() is None
        return pid_alive(self.pid)

    def tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.spec.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


def launch(spec: Spec) -> Running:
    """Start ``spec`` in a session of its own, without waiting for it to be ready."""
    spec.log.parent.mkdir(parents=True, exist_ok=True)
    with spec.log.open("ab") as log:
        process = subprocess.Popen(
            list(spec.argv), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            cwd=spec.cwd, env=dict(spec.env) if spec.env is not None else None,
            start_new_session=True,
            preexec_fn=killed_with_parent if spec.die_with_parent else None,
        )  # fmt: skip
    return Running(spec, process, process.pid)


@dataclass
class Supervisor:
    """Processes started in order, each ready before the next, stopped in reverse; a
    wait fails at once, with the log's end, when any of them exits."""

    label: str
    running: dict[str, Running] = field(default_factory=dict)

    def start(self, spec: Spec) -> Running:
        """Launch ``spec`` and wait until it is ready."""
        started = launch(spec)
        self.running[spec.name] = started
        if spec.ready is not None:
            self.wait(spec.name, spec.ready, spec.ready_timeout)
        return started

    def adopt(self, spec: Spec, pid: int) -> Running:
        """A process of ``spec`` that another process started (a ``down`` command's view
        of what ``up`` left running)."""
        adopted = Running(spec, None, pid)
        self.running[spec.name] = adopted
        return adopted

    def wait(self, what: str, ready: Callable[[], bool], timeout: float = 90.0,
             interval: float = 0.2) -> None:  # fmt: skip
        deadline = time.monotonic() + timeout
        while True:
            for member in self.running.values():
                if member.process is not None and member.process.poll() is not None:
                    raise RuntimeError(
                        f"{self.label}: {member.spec.name} exited with code "
                        f"{member.process.returncode} while waiting for {what}; last lines of "
                        f"{member.spec.log}:\n{member.tail()}"
                    )
            if ready():
                return
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"{self.label}: {what} not ready after {timeout:.0f}s; logs beside "
                    f"{next(iter(self.running.values())).spec.log.parent}"
                    if self.running else f"{self.label}: {what} not ready after {timeout:.0f}s"
                )  # fmt: skip
            time.sleep(interval)

    def stop(self, name: str) -> int | None:
        """Stop one member (SIGTERM, its grace, SIGKILL); its exit status if it was ours."""
        member = self.running.pop(name, None)
        if member is None:
            return None
        if member.process is not None:
            return stop(member.process, member.spec.grace)
        stop_pid(member.pid, member.spec.grace)
        return None

    def stop_all(self) -> None:
        """Every member, the last started first."""
        for name in reversed(list(self.running)):
            self.stop(name)

    @property
    def pids(self) -> dict[str, int]:
        return {name: member.pid for name, member in self.running.items()}


def pid_alive(pid: int | None) -> bool:
    """Whether ``pid`` runs (a zombie does not count)."""
    fields = None if pid is None else read_stat(pid)
    return fields is not None and fields[0] != "Z"


def stop_pid(pid: int, grace: float) -> None:
    """``stop`` for a process that is not our child: SIGTERM, ``grace``, SIGKILL."""
    if not pid_alive(pid):
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def descendants(root: int) -> Iterator[tuple[Process, Process | None, str]]:
    """Each live descendant of ``root``, each after its parent: the process, its parent
    (None for ``root``'s own children) and its ``/proc/PID/stat`` line. Children are
    listed by the thread that started them (``/proc/PID/task/TID/children``), so every
    thread's. A process reparented away from the tree (a daemon, an orphan another
    reaper took) is not in it."""
    todo: list[tuple[int, Process | None]] = [(root, None)]
    while todo:
        pid, parent = todo.pop()
        me = None
        if pid != root:
            try:
                with open(f"/proc/{pid}/stat") as stat:
                    text = stat.read()
            except OSError:
                continue  # gone meanwhile
            me = (pid, int(stat_fields(text)[19]))
            yield me, parent, text
        with contextlib.suppress(OSError):
            for tid in os.listdir(f"/proc/{pid}/task"):
                with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{tid}/children") as f:
                    todo.extend((int(child), me) for child in f.read().split())


def stat_fields(text: str) -> list[str]:
    """A ``/proc/PID/stat`` line's fields from the third (the state) on: past the name,
    which may hold spaces and parentheses."""
    return text[text.rindex(")") + 2 :].split()


def stat_name(text: str) -> str:
    """A ``/proc/PID/stat`` line's second field: the name (``comm``), in parentheses."""
    return text[text.index("(") + 1 : text.rindex(")")]


def read_stat(pid: int) -> list[str] | None:
    """``stat_fields`` of ``pid``; None once it has gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat_fields(stat.read())
    except OSError:
        return None


def cpu_seconds(fields: Sequence[str], *, reaped_children: bool = False) -> float:
    """The user and system CPU seconds of a process's ``stat_fields``; with
    ``reaped_children``, those of the children it has reaped too."""
    return sum(int(f) for f in fields[11 : 15 if reaped_children else 13]) / TICK


def age(pid: int) -> float | None:
    """Seconds since ``pid`` started; None once it has gone."""
    if (fields := read_stat(pid)) is None:
        return None
    try:
        uptime = float(Path("/proc/uptime").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return uptime - int(fields[19]) / TICK


def alive(process: Process) -> bool:
    """Whether ``process`` still runs, and not a later one given its pid (a zombie does
    not count)."""
    fields = read_stat(process[0])
    return fields is not None and fields[0] != "Z" and int(fields[19]) == process[1]


def command_line(pid: int) -> str:
    """``pid``'s arguments joined by spaces; empty once it has gone."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return cmdline.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def pids() -> list[int]:
    """The pid of every process on the machine (of this PID namespace), as ``/proc``
    lists them; one may be gone by the time it is read. The listing is read whole first,
    so a caller that stops early leaves no directory open."""
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def naming(mark: str) -> dict[int, str]:
    """The processes whose command line holds ``mark`` (a directory that is theirs
    alone), by pid, each with its command line."""
    return {pid: command for pid in pids() if mark in (command := command_line(pid))}


def inheriting(variable: str, value: str) -> list[int]:
    """The processes that started with ``variable=value`` in their environment: a
    launcher's mark that its descendants carry, whatever session they made or whoever
    adopted them since."""
    return [pid for pid in pids() if carries(pid, variable, value)]


def carries(pid: int, variable: str, value: str) -> bool:
    """Whether ``pid`` started with ``variable=value`` in its environment; False once it
    has gone."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as environ:
            return f"{variable}={value}".encode() in environ.read().split(b"\0")
    except OSError:
        return False
