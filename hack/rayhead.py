"""A real Ray head for the tests that need one (the contract tier, the RayJob integration
tests): ``ray start --head`` from the ``ray`` package of the test extras.

It binds the dashboard to all addresses (``--dashboard-host=0.0.0.0``) and everything
else to 127.0.0.1, on ports picked free at start, with its own ``--temp-dir``; usage
stats are off by flag and by environment. It runs only inside the sandbox
(``hack/sandbox``), where all addresses are this machine's and nothing leaves it.

Teardown stops only this head. ``ray stop --force`` is not used: it finds Ray
processes by name across the whole machine and would kill another session's head too.
Instead the head runs with ``--block`` in a session of its own (``hack.processes.launch``,
so ``ray start`` also dies with the thread that started it); SIGTERM lets ``ray start``
stop what it started, then SIGKILL goes to that session, then to any straggler whose
command line names this head's temp dir (workers started by the raylet) or whose
environment carries the head's mark (``HEAD_MARK``: a job's driver, which Ray starts in
a session of its own and ends only through a watcher in the head's session, so a SIGKILL
of that session before the watcher notices left the driver running). That stop is this
harness's own, not ``hack.processes.stop``, which ends one process only.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from hack import processes, sandbox
from hack.localcluster.cluster import free_port_block, free_ports
from hack.localhttp import LOCAL_HTTP

RAY = Path(sys.executable).with_name("ray")
WORKER_PORTS = 64
"""Ray's workers listen on ports from a range of this width."""
START_TIMEOUT = 300.0
"""Ray's start takes 10-60 s on a quiet 2-core machine; the same bound the Ray image gives
its dashboard (``hack/image/ray/build.py`` ENV): 180 s ran out in a full ``make test``
at load average 30-44. Past this it is broken."""
HEAD_MARK = "PULUMI_RAY_TESTS_HEAD"
"""Set to the head's temp dir in its environment, which every process Ray starts for it
inherits, job drivers included."""


@dataclass
class RayHead:
    process: subprocess.Popen[bytes]
    temp_dir: Path
    dashboard_port: int
    started_in: float
    """Seconds from ``ray start`` to the dashboard answering."""
    env: dict[str, str] = field(default_factory=dict)
    """What ``start_ray_head`` added to the head's environment (a revival keeps it)."""

    @property
    def dashboard_url(self) -> str:
        return f"http://127.0.0.1:{self.dashboard_port}"

    def log_tail(self, lines: int = 40) -> str:
        logs = sorted(self.temp_dir.glob("session_*/logs/dashboard*.*"))
        tails = [f"== {p.name}\n" + "\n".join(p.read_text().splitlines()[-lines:]) for p in logs]
        return "\n".join(tails)

    def stop(self, grace: float = 30.0) -> None:
        """SIGTERM, ``grace`` seconds for `ray start` to stop what it started, then SIGKILL
        to its session and to stragglers."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=grace)
        _kill_session(self.process.pid)
        # Reaped even when SIGTERM was not enough (a loaded machine): a `ray start` left
        # unwaited is a zombie, and its Popen warns when collected, failing a later test.
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=30)
        _kill_stragglers(self.temp_dir)
        shutil.rmtree(self.temp_dir, ignore_errors=True)


def start_ray_head(
    env: dict[str, str] | None = None, *, dashboard_port: int | None = None
) -> RayHead:
    """Start a head and wait for its dashboard; ``env`` adds to the head's environment,
    ``dashboard_port`` fixes the dashboard's port (default: a free one)."""
    sandbox.require_inside("a Ray head")
    temp_dir = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))
    flags = (
        "--port", "--dashboard-agent-listen-port", "--dashboard-agent-grpc-port",
        "--ray-client-server-port", "--node-manager-port", "--object-manager-port",
        "--metrics-export-port", "--runtime-env-agent-port",
    )  # fmt: skip
    picked = free_ports(len(flags) + 1)
    spare = picked.pop()
    dashboard_port = dashboard_port or spare
    ports = {**dict(zip(flags, picked, strict=True)), "--dashboard-port": dashboard_port}
    worker_base = free_port_block(WORKER_PORTS + 1)
    command = [
        str(RAY),
        "start",
        "--head",
        "--block",
        "--node-ip-address=127.0.0.1",
        "--disable-usage-stats",
        "--dashboard-host=0.0.0.0",
        "--include-dashboard=true",
        "--num-cpus=1",
        f"--temp-dir={temp_dir}",
        f"--min-worker-port={worker_base}",
        f"--max-worker-port={worker_base + WORKER_PORTS}",
        *(f"{flag}={port}" for flag, port in ports.items()),
    ]
    # Entrypoints run `python` and `ray` from PATH: make them this environment's.
    path = f"{RAY.parent}{os.pathsep}{os.environ.get('PATH', '')}"
    head_env = {
        **os.environ,
        "PATH": path,
        # Ray gives its dashboard 60 s to publish its address and each of the dashboard's
        # module subprocesses 30 s to start; past either, `ray start` exits 1. On a loaded
        # machine (make test's workers on two cores) both have been missed. Our own bound,
        # START_TIMEOUT, is the one that should decide.
        "RAY_DASHBOARD_STARTUP_TIMEOUT_S": str(int(START_TIMEOUT)),
        "RAY_DASHBOARD_SUBPROCESS_MODULE_WAIT_READY_TIMEOUT": str(START_TIMEOUT),
        **(env or {}),
        "RAY_USAGE_STATS_ENABLED": "0",
        HEAD_MARK: str(temp_dir),
    }
    started = time.monotonic()
    # Readiness is waited for below (its failure quotes Ray's own complaint) and stopping
    # is RayHead.stop's (a session and its stragglers, not one process): the shared
    # shape's launch gives the rest, a session of its own and death with its starter.
    spec = processes.Spec(
        name="ray-head", argv=command, log=temp_dir / "ray-start.log", env=head_env, grace=30
    )
    process = processes.launch(spec).process
    assert process is not None
    head = RayHead(process, temp_dir, dashboard_port, 0.0, dict(env or {}))
    try:
        _wait_until_ready(head, started, ports["--dashboard-agent-listen-port"])
    except BaseException:
        head.stop()
        raise
    head.started_in = time.monotonic() - started
    return head


def revive(head: RayHead) -> bool:
    """Start ``head`` again, in place and on the same dashboard port, if it has died.

    Under a loaded machine Ray's own processes have died between tests (the dashboard
    refusing connections a second after it answered); what the tests check is the
    operator, so the next test gets a head again instead of every later test of the module
    timing out on a dead one. A death is printed with its log, never hidden; a head that
    is only slow is left alone. Returns whether it was restarted.
    """
    exited = head.process.poll() is not None
    if not exited:
        try:
            LOCAL_HTTP.get(f"{head.dashboard_url}/api/gcs_healthz", timeout=10.0)
            return False
        except httpx.ConnectError:
            pass  # nothing listens: the dashboard is gone
        except httpx.TransportError:
            return False  # slow, not dead
    print(
        f"\nRay head on :{head.dashboard_port} died (ray start "
        f"{'exited ' + str(head.process.returncode) if exited else 'still running'}); "
        f"starting it again. Its last log lines:\n{head.log_tail(20)}",
        file=sys.stderr,
    )
    head.stop()
    again = start_ray_head(head.env, dashboard_port=head.dashboard_port)
    head.process, head.temp_dir, head.started_in = again.process, again.temp_dir, again.started_in
    return True


def gcs_healthy(dashboard_url: str, timeout: float = 10.0) -> bool:
    """The dashboard answers that its GCS is healthy (what KubeRay's submitter waits for);
    it answers 503 while its own check of the GCS runs out of time."""
    return _healthy(f"{dashboard_url}/api/gcs_healthz", timeout, says="success")


def _healthy(url: str, timeout: float, says: str = "") -> bool:
    """``url`` answers 200 within ``timeout``, with ``says`` in its text."""
    try:
        answer = LOCAL_HTTP.get(url, timeout=timeout)
    except httpx.TransportError:
        return False
    return answer.status_code == 200 and says in answer.text


def _wait_until_ready(head: RayHead, started: float, agent_port: int) -> None:
    """The head passes what KubeRay's readiness probe of a head checks: the dashboard
    reports the GCS healthy and the dashboard agent reports its raylet healthy. The agent
    matters to jobs: it runs them, and registers itself for the dashboard to find right
    after its HTTP server starts; a job submitted before that waits 10 s for it and is
    refused ("No available agent", HTTP 500), which a loaded machine made happen to a
    test's first job on a head whose GCS had answered healthy 35 s after ``ray start``."""
    agent_health = f"http://127.0.0.1:{agent_port}/api/local_raylet_healthz"
    while True:
        if head.process.poll() is not None:
            lines = (head.temp_dir / "ray-start.log").read_text(errors="replace").splitlines()
            # Ray ends its own complaint with the dashboard log's tail: keep both.
            said = [line for line in lines if "ERROR" in line or "Failed" in line]
            text = "\n".join([*said[:10], "...", *lines[-30:]])
            raise RuntimeError(f"ray start exited {head.process.returncode}:\n{text}")
        if gcs_healthy(head.dashboard_url, timeout=2.0) and _healthy(agent_health, 2.0):
            return
        if time.monotonic() - started > START_TIMEOUT:
            raise TimeoutError(
                f"the Ray dashboard and its agent did not answer healthy in {START_TIMEOUT:.0f} s"
            )
        time.sleep(0.25)


def _kill_session(session_id: int) -> None:
    """SIGKILL the head's process group, and wait until none of it runs
    (``_until_gone``)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(session_id, signal.SIGKILL)
    _until_gone(lambda: _group_runs(session_id))


def _group_runs(group: int) -> bool:
    return any(
        fields is not None and int(fields[2]) == group and fields[0] != "Z"
        for fields in map(processes.read_stat, processes.pids())
    )


def _kill_stragglers(temp_dir: Path) -> None:
    """SIGKILL every process whose command line names ``temp_dir`` or whose environment
    carries the head's mark (one reading of ``/proc``), and wait until none runs."""
    mark = str(temp_dir)
    marked = [
        pid
        for pid in processes.pids()
        if mark in processes.command_line(pid) or processes.carries(pid, HEAD_MARK, mark)
    ]
    for pid in marked:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    _until_gone(lambda: any(map(processes.pid_alive, marked)))


def _until_gone(running: Callable[[], bool]) -> None:
    """Wait (``processes.KILLED_WAIT`` at most) while ``running``: a process goes on
    running for a moment after SIGKILL, and one seen then looks left behind (the sandbox
    named Ray's dashboard modules so)."""
    deadline = time.monotonic() + processes.KILLED_WAIT
    while running() and time.monotonic() < deadline:
        time.sleep(0.05)
