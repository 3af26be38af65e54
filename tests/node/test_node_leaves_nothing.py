"""A real node leaves the machine as it found it, even when the run that started it is
killed outright with a pod running.

The node under test runs in a sandbox of its own, nested in this one (``hack.sandbox``
inside the sandbox: a network and mount namespace of its own, its own lock), started by
``python -m tests.node.nested``, which brings up a control plane with a real node, runs a
pod to Ready and then waits to be killed. The test SIGKILLs it, and then compares what
a leak would change: the machine's sysctls (the kubelet's own six and every other
writable one under kernel, vm and fs), its files where node components write by default,
the processes, the cgroups, and this sandbox's mounts and links.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from hack import processes, sandbox
from hack.node import cgroups
from hack.node.init import KUBELET_TUNABLES
from tests.waiting import wait_for

REPO_ROOT = Path(__file__).resolve().parents[2]
NESTED_READY_SECONDS = 300.0
"""A control plane, a real node and a pod from nothing on a loaded two-core machine."""
VOLATILE = {"kernel/ns_last_pid", "kernel/random/boot_id", "kernel/random/uuid"}


def sysctls() -> dict[str, str]:
    """Every writable entry under kernel, vm and fs: what a kubelet, kube-proxy or runtime
    could change for the whole machine."""
    values = {}
    for top in ("kernel", "vm", "fs"):
        for path in Path("/proc/sys", top).rglob("*"):
            name = str(path.relative_to("/proc/sys"))
            if name in VOLATILE or not path.is_file() or not path.stat().st_mode & 0o200:
                continue
            try:
                values[name] = path.read_text()
            except OSError:
                continue  # some entries are write-only or refuse reads
    return values


MACHINE_DIRECTORIES = ("/etc", "/opt", "/usr/local", "/var")
"""Where a kubelet, containerd or the CNI plugins write by default (``/var/lib/kubelet``,
``/var/log/pods``, ``/var/lib/cni``, ``/etc/cni``, ``/opt/containerd``)."""


def machine_files() -> set[str]:
    return {
        os.path.join(root, name)
        for top in MACHINE_DIRECTORIES
        for root, directories, files in os.walk(top)
        for name in directories + files
    }


def nested_processes(root: int) -> dict[processes.Process, str]:
    """The nested run's processes, by what they run: the descendants of its sandbox
    (``root``). The control plane, the node's init, containerd, its shims and the pods'
    processes are all in that tree, since the node's init reaps what its PID namespace
    orphans. (Their PID namespaces do not tell them apart from other workers' processes:
    the kernel gives a new namespace the number of one that ended meanwhile, so a set
    of them read before the run can hold the node's own.)"""
    return {me: processes.command_line(me[0]) for me, _, _ in processes.descendants(root)}


def left_behind(seen: dict[processes.Process, str], marker: str) -> list[str]:
    """Those of ``seen`` still running, and any process naming the nested run's
    directory (one reparented away from the tree before it was seen)."""
    left = [f"{pid}: {command[:200]}" for (pid, start), command in seen.items()
            if processes.alive((pid, start))]  # fmt: skip
    left += [f"{pid}: {command[:200]}" for pid, command in processes.naming(marker).items()]
    return left


def test_a_killed_run_leaves_no_process_cgroup_mount_link_or_sysctl(tmp_path: Path) -> None:
    assert set(KUBELET_TUNABLES) <= set(sysctls())
    sysctls_before = sysctls()
    mounts_before = Path("/proc/self/mountinfo").read_text()
    links_before = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    # Only the dead holders' cgroups are compared: another run on the machine, in a sandbox
    # of its own, makes and removes its live workers' accounts meanwhile (run 73 failed
    # on one such account, made during this test by a pytest started beside it).
    cgroups_before, orphans_before = cgroups.leftovers(), cgroups.orphans()
    files_before = machine_files()

    ready_file = tmp_path / "ready"
    log = (tmp_path / "nested.log").open("wb")
    nested = subprocess.Popen(
        [sys.executable, "-m", "hack.sandbox", "--", sys.executable, "-m", "tests.node.nested",
         str(tmp_path / "state"), str(ready_file)],
        cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT,
        # Without the marker of this sandbox, hack.sandbox makes one of its own, nested.
        env={**{k: v for k, v in os.environ.items() if k != sandbox.NETNS_ENV},
             "PYTHONPATH": str(REPO_ROOT)},
    )  # fmt: skip
    try:
        wait_for(
            "the nested run's node to run a pod", lambda: ready_file.exists() or nested.poll(),
            timeout=NESTED_READY_SECONDS, interval=0.5,
            explain=lambda: (tmp_path / "nested.log").read_text()[-3000:],
        )  # fmt: skip
        assert ready_file.exists(), (tmp_path / "nested.log").read_text()[-3000:]
        inner = int(ready_file.read_text())
        made = set(cgroups.leftovers()) - set(cgroups_before)
        assert any(group.name.startswith(cgroups.ROOT_PREFIX) for group in made), made
        seen = nested_processes(nested.pid)
        assert any("containerd-shim" in command for command in seen.values()), seen
        os.kill(inner, signal.SIGKILL)  # the run dies as a killed pytest would
        nested.wait(timeout=60)
    finally:
        # A failure above leaves the nested run up: killing its sandbox takes it along
        # (hack.sandbox starts its command to die with it), and its node follows.
        if nested.poll() is None:
            nested.kill()
            nested.wait()
        log.close()

    # The kernel takes a moment to finish off SIGKILLed processes.
    wait_for(
        "the nested run's processes to be gone",
        lambda: not left_behind(seen, str(tmp_path)),
        timeout=processes.KILLED_WAIT, interval=0.2,
        explain=lambda: left_behind(seen, str(tmp_path)),
    )  # fmt: skip
    assert cgroups.orphans() == orphans_before
    assert Path("/proc/self/mountinfo").read_text() == mounts_before
    assert (
        subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout == links_before
    )
    assert not machine_files() - files_before, sorted(machine_files() - files_before)[:20]
    after = sysctls()
    changed = {k: (v, after.get(k)) for k, v in sysctls_before.items() if after.get(k) != v}
    assert not changed, f"sysctls changed by the node: {changed}"
