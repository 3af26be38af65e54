"""CPU seconds per test, beside pytest's wall-clock durations.

On two cores the suite's length is bounded by the CPU its tests burn more than by how
long any one of them waits, and ``--durations`` cannot tell the two apart: a test that
sleeps for a minute and one that builds an image for a minute look alike there. Each
test's CPU goes into its report as the ``cpu_seconds`` user property (so into the JUnit
file) and the session ends with the modules that used most.

What is counted, from the test's setup to the end of its teardown, in the sandbox: what
the worker's CPU account counts (``hack/node/cgroups.py``: a cgroup the worker moves
into before its first test, so every process it starts is counted there, reparented or
not), and what each real node's cgroup root counts whose node the worker started (its
pods). So a process that outlives the test, such as a session's control plane, is
charged to each test for its share while that test runs. Outside the sandbox, which
makes no cgroup, it is the pytest process's own CPU and that of the processes it waited
for (``os.times``), and what its live descendants used meanwhile.

Either way the test's CPU is split by program (``/proc``, the same reading of live
descendants): an API server, a Ray head, an operator. That split misses a process
reparented away (a daemonized one), and counts twice one whose parent reaped it and was
then reaped in turn before the next reading (a Ray head's ``ray start`` stopping its
components); in the sandbox, what it got wrong is its own entry, ``UNSEEN``, so the
programs add up to the account's figure.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import NamedTuple

import pytest

from hack import processes, sandbox
from hack.node import cgroups
from hack.processes import Process

PROPERTY = "cpu_seconds"
BY_PROGRAM = "cpu_seconds_by_program"
"""The same seconds by the program that used them (a JSON object)."""
SHOWN = 15
"""How many modules, and how many programs, the session's summary names."""

OWN = "tests (and what they waited for)"
"""The program this process's own CPU is charged to: the tests, and every child they
started and waited for before a reading saw it (a `kubectl`, a Pulumi command)."""
UNSEEN = "(reaped or reparented out of view)"
"""What the split by program missed (or, negative, counted twice) of the CPU the
account counted."""


class Seen(NamedTuple):
    """A live descendant as a reading saw it."""

    parent: Process | None
    """None: this process."""
    seconds: float
    """Its CPU and its reaped children's."""
    program: str


@dataclass(frozen=True)
class Reading:
    """CPU seconds so far: this process's and its reaped children's, and each live
    descendant's."""

    own: float
    descendants: Mapping[Process, Seen]
    accounts: Mapping[str, float]
    """By cgroup: the CPU seconds of the worker's account and of each real node's root
    whose node it started; empty outside the sandbox."""

    @classmethod
    def now(cls) -> Reading:
        times = os.times()
        own = times.user + times.system + times.children_user + times.children_system
        descendants = _descendants(os.getpid())
        return cls(own, descendants, _accounts({pid for pid, _start in descendants}))

    def since(self, earlier: Reading) -> dict[str, float]:
        """CPU seconds used between ``earlier`` and this reading by this process and
        its descendants, by program. A descendant alive at both is charged its
        difference, a new one all it has used. One gone since ``earlier`` whose parent
        is still here was reaped by that parent, whose figure now holds all it used, so
        its earlier part is taken back out of the parent's; one whose parent is gone too
        was reaped out of view (an orphan goes to the sandbox's init), so what it used
        since is lost, and what was charged before stays."""
        used: defaultdict[str, float] = defaultdict(float)
        used[OWN] = self.own - earlier.own
        for process, seen in self.descendants.items():
            before = earlier.descendants.get(process)
            used[seen.program] += seen.seconds - (before.seconds if before else 0.0)
        for process, seen in earlier.descendants.items():
            if process in self.descendants:
                continue
            if seen.parent is None:
                used[OWN] -= seen.seconds
            elif (reaper := self.descendants.get(seen.parent)) is not None:
                used[reaper.program] -= seen.seconds
        if self.accounts:
            # A cgroup gone since (a node stopped) takes what it used since with it.
            counted = sum(
                seconds - earlier.accounts.get(name, 0.0) for name, seconds in self.accounts.items()
            )
            if abs(unseen := counted - sum(used.values())) >= 0.01:
                used[UNSEEN] = unseen
        return dict(used)


def _program(pid: int, name: str) -> str:
    """What a process runs, for the summary: its name, or for a Python interpreter the
    module or script it runs (``operator_runtime``, ``dashboard.py``)."""
    if not name.startswith("python"):
        return name
    with contextlib.suppress(OSError), open(f"/proc/{pid}/cmdline", "rb") as cmdline:
        argv = cmdline.read(4096).decode(errors="replace").split("\0")
        for i, arg in enumerate(argv[1:-1], 1):
            if arg == "-m":
                return f"python -m {argv[i + 1]}"
            if arg == "-c":
                break
            if not arg.startswith("-"):
                return f"python {os.path.basename(arg)}"
    return name


_PROGRAMS: dict[Process, str] = {}
"""Each process's program, read once (its command line does not change)."""


def _descendants(root: int) -> dict[Process, Seen]:
    """Each live descendant of ``root`` with what it has used."""
    found: dict[Process, Seen] = {}
    for me, parent, text in processes.descendants(root):
        if me not in _PROGRAMS:
            _PROGRAMS[me] = _program(me[0], processes.stat_name(text))
        fields = processes.stat_fields(text)
        seconds = processes.cpu_seconds(fields, reaped_children=True)
        found[me] = Seen(parent, seconds, _PROGRAMS[me])
    for gone in _PROGRAMS.keys() - found.keys():
        del _PROGRAMS[gone]
    return found


_ACCOUNT: list[cgroups.Account] = []
"""This worker's CPU account once it has moved into it (``_open_account``)."""
_OPENED = pytest.StashKey[bool]()


def _open_account(config: pytest.Config) -> None:
    """Before this process's first test, in the sandbox: move it into a CPU account of
    its own (nothing of it runs yet but pytest)."""
    if config.stash.get(_OPENED, False):
        return
    config.stash[_OPENED] = True
    if sandbox.inside() and (account := cgroups.open_account(os.getpid())) is not None:
        _ACCOUNT.append(account)


def _accounts(descendants: set[int]) -> dict[str, float]:
    """The CPU seconds of this worker's account and of each real node's cgroup root
    whose holder (``hack/node/node.py``) is one of ``descendants``, by name."""
    if not _ACCOUNT:
        return {}
    account = _ACCOUNT[0]
    nodes = [
        root
        for root in account.hierarchy.glob(f"{cgroups.ROOT_PREFIX}*")
        if cgroups.holder(root.name) in descendants
    ]
    seconds = {group.name: cgroups.cpu_seconds(group) for group in [account.group, *nodes]}
    return {name: used for name, used in seconds.items() if used is not None}


_STARTED = pytest.StashKey[Reading]()
_ENDED: list[Reading] = []
"""The reading the worker's last test ended with, which the next one starts from: nothing
of a test runs between the two, and a reading walks every descendant's threads (some 5 ms
of CPU with a control plane and a Ray head), twice per test otherwise."""


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    _open_account(item.config)
    item.stash[_STARTED] = _ENDED.pop() if _ENDED else Reading.now()
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    if call.when == "teardown" and _STARTED in item.stash:
        ended = Reading.now()
        _ENDED[:] = [ended]
        used = ended.since(item.stash[_STARTED])
        item.user_properties.append((PROPERTY, round(sum(used.values()), 2)))
        by_program = {name: round(seconds, 2) for name, seconds in used.items() if seconds}
        item.user_properties.append((BY_PROGRAM, json.dumps(by_program, sort_keys=True)))
    yield


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # an xdist worker's reports go to the controller
        config.pluginmanager.register(ModuleTotals(), "cputime-totals")


def pytest_unconfigure(config: pytest.Config) -> None:
    del config
    while _ACCOUNT:
        cgroups.close_account(_ACCOUNT.pop(), os.getpid())


class ModuleTotals:
    """Adds up the properties where the reports arrive (the session, or xdist's
    controller) and prints the modules that used most, after how busy the machine's CPUs
    were over the session: what no per-test figure shows (the pods on the real node, the
    daemons) and whether more workers could have run at all; then the programs that
    used most (a control plane's, a Ray head's, an operator's processes)."""

    def __init__(self) -> None:
        self.seconds: defaultdict[str, float] = defaultdict(float)
        self.programs: defaultdict[str, float] = defaultdict(float)
        self.machine = _machine_cpu()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "teardown":
            return
        properties = dict(report.user_properties)
        seconds = properties.get(PROPERTY)
        if isinstance(seconds, (int, float)):
            self.seconds[report.nodeid.split("::", 1)[0]] += float(seconds)
        if isinstance(by_program := properties.get(BY_PROGRAM), str):
            for program, used in json.loads(by_program).items():
                self.programs[program] += used

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.seconds:
            return
        total = sum(self.seconds.values())
        terminalreporter.write_sep("=", f"most CPU by module (of {total:.0f} CPU-s counted)")
        now = _machine_cpu()
        busy, idle, waited = (now[i] - self.machine[i] for i in range(3))
        if busy + idle > 0:
            terminalreporter.write_line(
                f"the machine's CPUs: {busy / (busy + idle):.0%} busy over the session, "
                f"{busy:.0f} CPU-s; some task waiting for a CPU {waited:.0f} s; "
                f"out of the tests' view {max(busy - total, 0):.0f} CPU-s"
            )
        _write_most(terminalreporter, self.seconds)
        terminalreporter.write_sep("=", "most CPU by program")
        _write_most(terminalreporter, self.programs)


def _write_most(terminalreporter: pytest.TerminalReporter, totals: Mapping[str, float]) -> None:
    for name, seconds in sorted(totals.items(), key=lambda i: -i[1])[:SHOWN]:
        terminalreporter.write_line(f"{seconds:8.1f} CPU-s  {name}")


def _machine_cpu() -> tuple[float, float, float]:
    """Seconds the machine's CPUs were busy and idle since boot (``/proc/stat``), and
    seconds some task waited for a CPU (``/proc/pressure/cpu``; 0 without PSI)."""
    with open("/proc/stat") as stat:
        user, nice, system, idle, iowait, *rest = map(int, stat.readline().split()[1:9])
    waited = 0.0
    with contextlib.suppress(OSError), open("/proc/pressure/cpu") as pressure:
        waited = int(pressure.readline().rsplit("total=", 1)[1]) / 1e6
    busy = user + nice + system + sum(rest)
    return busy / processes.TICK, (idle + iowait) / processes.TICK, waited
