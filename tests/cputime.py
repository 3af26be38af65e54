"""CPU seconds per test, beside pytest's wall-clock durations.

On two cores the suite's length is bounded by the CPU its tests burn more than by how
long any one of them waits, and ``--durations`` cannot tell the two apart: a test that
sleeps for a minute and one that builds an image for a minute look alike there. Each
test's CPU goes into its report as the ``cpu_seconds`` user property (so into the JUnit
file) and the session ends with the modules that used most.

What is counted: the pytest process's own CPU and that of the processes it waited for
(``os.times``), from the test's setup to the end of its teardown. A process that
outlives the test is counted when it is reaped (a session's control plane, at the last
test of the worker that started it); one reparented away (a pod on the real node, a
daemon ``ray start`` left running) is not counted at all.
"""

from __future__ import annotations

import contextlib
import os
from collections import defaultdict
from collections.abc import Iterator

import pytest

PROPERTY = "cpu_seconds"
SHOWN = 15
"""How many modules the session's summary names."""

_STARTED = pytest.StashKey[float]()


def _cpu() -> float:
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    item.stash[_STARTED] = _cpu()
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    if call.when == "teardown" and _STARTED in item.stash:
        item.user_properties.append((PROPERTY, round(_cpu() - item.stash[_STARTED], 2)))
    yield


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # an xdist worker's reports go to the controller
        config.pluginmanager.register(ModuleTotals(), "cputime-totals")


class ModuleTotals:
    """Adds up the property where the reports arrive (the session, or xdist's
    controller) and prints the modules that used most, after how busy the machine's CPUs
    were over the session: what no per-test figure shows (the pods on the real node, the
    daemons) and whether more workers could have run at all."""

    def __init__(self) -> None:
        self.seconds: defaultdict[str, float] = defaultdict(float)
        self.machine = _machine_cpu()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        seconds = dict(report.user_properties).get(PROPERTY)
        if report.when == "teardown" and isinstance(seconds, (int, float)):
            self.seconds[report.nodeid.split("::", 1)[0]] += float(seconds)

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
                f"{busy:.0f} CPU-s; some task waiting for a CPU {waited:.0f} s"
            )
        for module, seconds in sorted(self.seconds.items(), key=lambda i: -i[1])[:SHOWN]:
            terminalreporter.write_line(f"{seconds:8.1f} CPU-s  {module}")


def _machine_cpu() -> tuple[float, float, float]:
    """Seconds the machine's CPUs were busy and idle since boot (``/proc/stat``), and
    seconds some task waited for a CPU (``/proc/pressure/cpu``; 0 without PSI)."""
    ticks = os.sysconf("SC_CLK_TCK")
    with open("/proc/stat") as stat:
        user, nice, system, idle, iowait, *rest = map(int, stat.readline().split()[1:9])
    waited = 0.0
    with contextlib.suppress(OSError), open("/proc/pressure/cpu") as pressure:
        waited = int(pressure.readline().rsplit("total=", 1)[1]) / 1e6
    busy = user + nice + system + sum(rest)
    return busy / ticks, (idle + iowait) / ticks, waited
