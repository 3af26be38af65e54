"""``hack.processes``: ``stop`` (SIGTERM, the grace period, then SIGKILL; always reaped)
and the ``Supervisor`` every harness starts its processes with."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from hack import processes
from tests.waiting import wait_for

IGNORES_SIGTERM = (
    "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "print('ready', flush=True); time.sleep(60)"
)


def test_a_process_that_stops_on_sigterm_is_not_killed() -> None:
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    assert processes.stop(process, grace=30) == -signal.SIGTERM


def test_a_process_that_ignores_sigterm_is_killed_after_the_grace() -> None:
    process = subprocess.Popen([sys.executable, "-c", IGNORES_SIGTERM], stdout=subprocess.PIPE)
    assert process.stdout is not None and process.stdout.readline() == b"ready\n"
    started = time.monotonic()
    assert processes.stop(process, grace=0.5) == -signal.SIGKILL
    assert time.monotonic() - started >= 0.5
    process.stdout.close()


def test_a_finished_process_keeps_its_exit_status() -> None:
    process = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    process.wait(timeout=30)
    assert processes.stop(process, grace=1) == 3


def _spec(tmp_path: Path, name: str, code: str, **extra: Any) -> processes.Spec:
    return processes.Spec(name=name, argv=[sys.executable, "-c", code],
                          log=tmp_path / f"{name}.log", **extra)  # fmt: skip


def test_a_supervisor_starts_in_order_waits_ready_and_stops_in_reverse(tmp_path: Path) -> None:
    order = tmp_path / "order"
    stopper = (
        "import signal, sys, time\n"
        "def bye(*_):\n"
        f"    open({str(order)!r}, 'a').write(sys.argv[1] + ' '); sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, bye)\n"
        "open(sys.argv[1] + '.up', 'w').close(); time.sleep(60)\n"
    )
    supervisor = processes.Supervisor("test")
    for name in ("first", "second"):
        marker = tmp_path / name
        spec = processes.Spec(
            name=name, argv=[sys.executable, "-c", stopper, str(marker)],
            log=tmp_path / f"{name}.log", ready=lambda m=marker: m.with_suffix(".up").exists(),
            ready_timeout=30,
        )  # fmt: skip
        supervisor.start(spec)
        assert (tmp_path / f"{name}.up").exists()  # ready before the next starts
    assert set(supervisor.pids) == {"first", "second"}
    supervisor.stop_all()
    assert order.read_text().split() == [str(tmp_path / "second"), str(tmp_path / "first")]
    assert supervisor.pids == {}


def test_a_wait_fails_naming_the_member_that_exited_and_its_log(tmp_path: Path) -> None:
    supervisor = processes.Supervisor("test")
    supervisor.start(_spec(tmp_path, "crasher", "print('bad flag --x'); raise SystemExit(7)"))
    with pytest.raises(RuntimeError, match=r"crasher exited with code 7(.|\n)*bad flag --x"):
        supervisor.wait("something", lambda: False, timeout=30)


def test_an_adopted_process_is_stopped_by_its_pid(tmp_path: Path) -> None:
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    supervisor = processes.Supervisor("down")
    adopted = supervisor.adopt(_spec(tmp_path, "elsewhere", "pass", grace=5), process.pid)
    assert adopted.alive()
    supervisor.stop("elsewhere")
    assert process.wait(timeout=30) == -signal.SIGTERM


def test_descendants_are_the_tree_below_a_process_each_after_its_parent() -> None:
    shell = subprocess.Popen(["sh", "-c", "sleep 60 & sleep 60 & wait"], start_new_session=True)

    def names() -> list[str]:
        return [processes.stat_name(text) for _, _, text in processes.descendants(shell.pid)]

    try:
        wait_for("the shell's two sleeps", lambda: names() == ["sleep", "sleep"], timeout=30)
        tree = list(processes.descendants(shell.pid))
        assert {parent for _, parent, _ in tree} == {None}  # the root itself is not listed
        sleepers = [me for me, _, _ in tree]
        assert all(processes.alive(me) for me in sleepers)
        assert not processes.alive((sleepers[0][0], sleepers[0][1] + 1))  # a later pid's
        mine = list(processes.descendants(os.getpid()))
        shell_entry = next(me for me, _, _ in mine if me[0] == shell.pid)
        assert [me for me, parent, _ in mine if parent == shell_entry] == sleepers
    finally:
        os.killpg(shell.pid, signal.SIGKILL)
        shell.wait(timeout=processes.KILLED_WAIT)
    wait_for("the sleeps to die", lambda: not any(map(processes.alive, sleepers)), timeout=30)


def test_pids_are_the_live_processes() -> None:
    child = subprocess.Popen(["sleep", "60"])
    try:
        listed = set(processes.pids())
        assert {os.getpid(), child.pid} <= listed
    finally:
        child.kill()
        child.wait()
    assert child.pid not in set(processes.pids())


def test_inheriting_lists_the_processes_started_with_the_mark_and_their_descendants() -> None:
    value = f"mark-{os.getpid()}"
    # The marked shell's sleep starts a session of its own, as a Ray job's driver does.
    marked = subprocess.Popen(
        ["sh", "-c", "setsid sleep 60 & wait"],
        env={**os.environ, "TEST_MARK": value},
        start_new_session=True,
    )
    unmarked = subprocess.Popen(["sleep", "60"], start_new_session=True)

    def listed() -> list[int]:
        return processes.inheriting("TEST_MARK", value)

    try:
        wait_for("the marked shell and its sleep", lambda: len(listed()) == 2, timeout=30)
        assert marked.pid in listed()
        assert unmarked.pid not in listed()
        assert processes.inheriting("TEST_MARK", value + "-other") == []
    finally:
        for pid in listed():
            os.kill(pid, signal.SIGKILL)
        unmarked.kill()
        marked.wait(timeout=processes.KILLED_WAIT)
        unmarked.wait(timeout=processes.KILLED_WAIT)
