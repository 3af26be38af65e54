"""CPU seconds per process of this process's tree, sampled from ``/proc`` while a command runs.

``getrusage(RUSAGE_CHILDREN)`` gives the CPU of a finished ``pulumi`` command with
everything it ran, as one figure. To say where it goes (the CLI and engine, the language
host, the program, the Kubernetes provider, and the control plane that answers the
provider's dry runs), :class:`TreeSampler` reads ``/proc/<pid>/stat`` of every descendant
every few tens of milliseconds and keeps each process's last reading: a process that
exits between two readings loses at most one interval, which the table's total beside
the rusage figure shows. Linux only (the benchmarks run in the sandbox, which is Linux).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

from hack import processes

PROC = Path("/proc")


@dataclass(frozen=True)
class Stat:
    """What one reading of ``/proc/<pid>`` tells: the parent, the CPU so far and the peak
    resident memory (``VmHWM``, bytes; 0 where the kernel does not say)."""

    pid: int
    ppid: int
    name: str
    cpu: float
    peak_rss: int = 0


def read_stat(pid: int, stat: str | None = None) -> Stat | None:
    """The process's parent, program name (``argv[0]``'s base name, which ``comm`` cuts to
    15 characters) and user + system CPU seconds; None once it has gone. ``stat``: its
    ``/proc/<pid>/stat`` line, when read already."""
    try:
        stat = stat or (PROC / str(pid) / "stat").read_text()
        argv0 = (PROC / str(pid) / "cmdline").read_bytes().split(b"\0", 1)[0].decode()
        status = (PROC / str(pid) / "status").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    fields = processes.stat_fields(stat)
    name = os.path.basename(argv0) or processes.stat_name(stat)
    peak = next((line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:")), "0")
    cpu = processes.cpu_seconds(fields)
    return Stat(pid, int(fields[1]), name, cpu, int(peak) * 1024)


def descendants(root: int) -> dict[int, Stat]:
    """Every live process below ``root`` (not ``root`` itself), by pid."""
    return {
        me[0]: stat
        for me, _, text in processes.descendants(root)
        if (stat := read_stat(me[0], text)) is not None
    }


ROLES = {
    "pulumi": "CLI + engine (pulumi)",
    "pulumi-language-python": "language host",
    "pulumi-resource-kubernetes": "Kubernetes provider",
    "kube-apiserver": "kube-apiserver",
    "etcd": "etcd",
}


def role(stat: Stat, parents: dict[int, Stat]) -> str:
    """Who a process is in a Pulumi command: a Python process under the language host is
    the program, one elsewhere (the operator under test) is itself; any other control-plane
    process is grouped."""
    for name, label in ROLES.items():
        # ``comm`` (the fallback once ``cmdline`` is gone) holds 15 characters.
        if stat.name == name or (len(stat.name) == 15 and name.startswith(stat.name)):
            return label
    if stat.name.startswith("python"):
        parent = parents.get(stat.ppid)
        while parent is not None:
            if parent.name == "pulumi-language-python":
                return "Python program"
            parent = parents.get(parent.ppid)
        return "other Python (operator)"
    if stat.name.startswith("pulumi-"):
        return stat.name
    return "other"


class TreeSampler:
    """CPU each descendant of ``root`` spent between :meth:`start` and :meth:`stop`."""

    def __init__(self, root: int | None = None, interval: float = 0.05) -> None:
        self.root = os.getpid() if root is None else root
        self.interval = interval
        self._baseline: dict[int, float] = {}
        self._seen: dict[int, Stat] = {}
        self.peaks: dict[str, int] = {}
        """Per role, the largest peak resident memory of one of its processes (bytes)."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._baseline = {pid: stat.cpu for pid, stat in descendants(self.root).items()}
        self._thread.start()

    def stop(self) -> dict[str, float]:
        """CPU seconds per role (see :func:`role`) since :meth:`start`; the largest peak
        resident memory of a process of each role is in :attr:`peaks` (bytes)."""
        self._stop.set()
        self._thread.join()
        self._sample()
        split: dict[str, float] = {}
        for pid, stat in self._seen.items():
            name = role(stat, self._seen)
            split[name] = split.get(name, 0.0) + stat.cpu - self._baseline.get(pid, 0.0)
            self.peaks[name] = max(self.peaks.get(name, 0), stat.peak_rss)
        return dict(sorted(split.items(), key=lambda item: -item[1]))

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def _sample(self) -> None:
        for pid, stat in descendants(self.root).items():
            seen = self._seen.get(pid)
            # VmHWM is gone from a zombie's status: keep the peak read while it ran.
            if seen is not None and seen.peak_rss > stat.peak_rss:
                stat = Stat(stat.pid, stat.ppid, stat.name, stat.cpu, seen.peak_rss)
            self._seen[pid] = stat
