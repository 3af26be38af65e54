"""tests/cputime.py: a test's CPU, its children's included (charged to the test they
ran in), and not its sleep; in the sandbox, counted by a CPU account of the run's own,
which is gone when the run ends."""

from __future__ import annotations

import json
import os
from pathlib import Path
from xml.etree import ElementTree

import pytest

from hack.node import cgroups
from tests.cputime import OWN, UNSEEN

REPO_ROOT = Path(__file__).resolve().parents[2]

pytest_plugins = ["pytester"]

TESTS = """
import os, signal, subprocess, sys, time

def test_spins():
    end = time.process_time() + 0.4
    while time.process_time() < end:
        pass

def test_child_spins():
    subprocess.run([sys.executable, "-c",
                    "import time\\nend = time.process_time() + 0.4\\n"
                    "while time.process_time() < end: pass"], check=True)

def test_sleeps():
    time.sleep(0.4)

def spin_then_stop(pid):
    # let a spinning process use 0.4 CPU-s, then stop it (it stays, using nothing)
    tick = os.sysconf("SC_CLK_TCK")
    while True:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        if (int(fields[11]) + int(fields[12])) / tick >= 0.4:
            break
        time.sleep(0.05)
    os.kill(pid, signal.SIGSTOP)

SPINNER = []

def test_starts_a_spinner_it_leaves_running():
    SPINNER.append(subprocess.Popen([sys.executable, "-c", "while True: pass"]))
    spin_then_stop(SPINNER[0].pid)

def test_reaps_the_spinner():
    SPINNER[0].kill()
    SPINNER[0].wait()

def spinning_grandchild(then):
    # a child that starts a grandchild spinning and says its pid, then runs `then`;
    # both, once the grandchild has used 0.4 CPU-s
    child = subprocess.Popen([sys.executable, "-c",
        "import subprocess, sys, time\\n"
        "spinner = subprocess.Popen([sys.executable, '-c', 'while True: pass'])\\n"
        "print(spinner.pid, flush=True)\\n" + then],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    grandchild = int(child.stdout.readline())
    spin_then_stop(grandchild)
    return child, grandchild

ORPHAN = []

def test_leaves_a_grandchild_spinning():
    ORPHAN.extend(spinning_grandchild("time.sleep(600)"))

REAPER = []

def test_leaves_a_grandchild_its_parent_will_reap():
    REAPER.extend(spinning_grandchild("sys.stdin.readline()\\nspinner.kill()\\nspinner.wait()"))

def test_the_parent_reaps_it_and_is_reaped():
    # the grandchild's CPU reaches this process's children's times through its
    # parent's: it was charged when it spun, not again now
    REAPER[0].communicate("\\n")

def test_orphans_it_and_kills_it():
    ORPHAN[0].kill()
    ORPHAN[0].wait()
    os.kill(ORPHAN[1], signal.SIGKILL)
    deadline = time.monotonic() + 10  # until the init it went to has reaped it
    while os.path.exists(f"/proc/{ORPHAN[1]}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{ORPHAN[1]}")
"""


def test_cpu_of_the_test_and_its_children_is_reported_and_sleep_is_not(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    hierarchy = cgroups.cpu_hierarchy()
    assert hierarchy is not None, "no cgroup hierarchy counts CPU on this machine"
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))
    pytester.makepyfile(test_load=TESTS)
    result = pytester.runpytest_subprocess("-p", "tests.cputime", "-p", "no:randomly",
                                           "--junitxml=out.xml")  # fmt: skip
    account = cgroups.group_of(os.getpid(), hierarchy)
    assert account is not None and account.name.startswith(cgroups.ACCOUNT_PREFIX), account
    result.assert_outcomes(passed=9)
    # The run's own account was made in this worker's and is gone with the run.
    assert [path for path in account.iterdir() if path.is_dir()] == []
    cases = list(ElementTree.parse(pytester.path / "out.xml").iter("testcase"))
    seconds = {
        case.get("name"): float(prop.get("value", ""))
        for case in cases
        for prop in case.iter("property")
        if prop.get("name") == "cpu_seconds"
    }
    by_program = {
        case.get("name"): json.loads(prop.get("value", ""))
        for case in cases
        for prop in case.iter("property")
        if prop.get("name") == "cpu_seconds_by_program"
    }
    assert seconds.keys() == {
        "test_spins", "test_child_spins", "test_sleeps",
        "test_starts_a_spinner_it_leaves_running", "test_reaps_the_spinner",
        "test_leaves_a_grandchild_spinning", "test_orphans_it_and_kills_it",
        "test_leaves_a_grandchild_its_parent_will_reap",
        "test_the_parent_reaps_it_and_is_reaped",
    }, seconds  # fmt: skip
    for name, programs in by_program.items():  # the split adds up to the account's figure
        assert abs(sum(programs.values()) - seconds[name]) < 0.05, (name, programs)
    assert seconds["test_spins"] >= 0.35
    assert seconds["test_child_spins"] >= 0.35  # a child's, counted once it is reaped
    assert seconds["test_sleeps"] < 0.2
    # A child that outlives its test is charged to the test it spun in, not to the one
    # that reaps it.
    assert seconds["test_starts_a_spinner_it_leaves_running"] >= 0.35
    assert seconds["test_reaps_the_spinner"] < 0.2
    # ... under its own program, not the tests'.
    spun = by_program["test_starts_a_spinner_it_leaves_running"]
    assert sum(v for k, v in spun.items() if k != OWN) >= 0.35, spun
    # An orphan reaped out of view takes nothing back of what was charged for it.
    assert seconds["test_leaves_a_grandchild_spinning"] >= 0.35
    assert -0.1 < seconds["test_orphans_it_and_kills_it"] < 0.2
    # A grandchild reaped by its parent, the parent reaped by the test, is not charged
    # twice: the split by program did (its parent's figure took it in), the account not.
    assert seconds["test_leaves_a_grandchild_its_parent_will_reap"] >= 0.35
    assert -0.1 < seconds["test_the_parent_reaps_it_and_is_reaped"] < 0.2
    reaped = by_program["test_the_parent_reaps_it_and_is_reaped"]
    assert reaped.get(UNSEEN, 0.0) < -0.3, reaped
    result.stdout.re_match_lines([
        r"=+ most CPU by module \(of \d+ CPU-s counted\) =+",
        r"the machine's CPUs: \d+% busy over the session, \d+ CPU-s; "
        r"some task waiting for a CPU \d+ s; out of the tests' view \d+ CPU-s",
        r"\s+\d+\.\d CPU-s  test_load\.py",
        r"=+ most CPU by program =+",
        r"\s+\d+\.\d CPU-s  python.*",
    ])  # fmt: skip
