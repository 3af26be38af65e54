"""``benchmarks/proctree.py``: the per-process CPU split of ``stack_template --split``."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from benchmarks.proctree import Stat, TreeSampler, descendants, role

BURN = "import time\nend = time.process_time() + {seconds}\nwhile time.process_time() < end: pass\n"


def test_a_child_that_exits_keeps_the_cpu_and_memory_it_used() -> None:
    # The grandchild holds 60 MB, burns 0.3 s of CPU and exits: the sampler must still
    # count both (its last reading), and nothing it did not spend; being a grandchild, it
    # shows the tree is walked.
    burn = "held = bytearray(60_000_000)\n" + BURN.format(seconds=0.3)
    script = f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', {burn!r}])\n"
    sampler = TreeSampler(interval=0.02)
    sampler.start()
    subprocess.run([sys.executable, "-c", script], check=True)
    split = sampler.stop()
    python = split["other Python (operator)"]
    assert 0.2 <= python <= 5.0, split
    assert sampler.peaks["other Python (operator)"] >= 55_000_000, sampler.peaks


def test_processes_alive_before_start_count_only_what_they_spend_after() -> None:
    child = subprocess.Popen([sys.executable, "-c", BURN.format(seconds=0.3) + "input()\n"],
                             stdin=subprocess.PIPE)  # fmt: skip
    try:
        deadline = time.monotonic() + 120  # the child's 0.3 s of CPU, on a loaded machine
        while descendants_cpu(child.pid) < 0.3 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert descendants_cpu(child.pid) >= 0.3
        sampler = TreeSampler(interval=0.02)
        sampler.start()
        split = sampler.stop()
        assert split.get("other Python (operator)", 0.0) < 0.2, split
    finally:
        child.communicate(b"\n", timeout=60)


def descendants_cpu(pid: int) -> float:
    stat = descendants(os.getpid()).get(pid)
    return stat.cpu if stat else 0.0


def test_roles_follow_the_pulumi_process_tree() -> None:
    cli = Stat(10, 1, "pulumi", 0.0)
    host = Stat(11, 10, "pulumi-language-python", 0.0)
    program = Stat(12, 11, "python3", 0.0)
    provider = Stat(13, 10, "pulumi-resource", 0.0)  # comm, cut to 15 characters
    operator = Stat(14, 1, "python", 0.0)
    tree = {s.pid: s for s in (cli, host, program, provider, operator)}
    assert role(cli, tree) == "CLI + engine (pulumi)"
    assert role(host, tree) == "language host"
    assert role(program, tree) == "Python program"
    assert role(provider, tree) == "Kubernetes provider"
    assert role(operator, tree) == "other Python (operator)"
    assert role(Stat(15, 1, "kube-apiserver", 0.0), tree) == "kube-apiserver"
    assert role(Stat(16, 1, "kwok", 0.0), tree) == "other"
