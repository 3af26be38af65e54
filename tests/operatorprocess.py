"""The operator as users run it: ``python -m operator_runtime`` in a process of its own,
with the flags and environment a test chooses, nothing patched or hooked in.

    with OperatorProcess(kubeconfig, namespace, "--use-kubernetes-proxy") as operator:
        ...
    # leaving the block sends SIGTERM and requires a clean drain (exit 0); a failure
    # inside it prints the operator's last 80 lines
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

from hack import processes
from tests.scratch import scratch_dir
from tests.waiting import report_also, stop_reporting, wait_for

START_SECONDS = 120.0
"""From the process start to its controllers started, on a loaded machine."""
STARTED = "controller(s):"
"""What the manager logs once its informers have listed and its workers run."""


class OperatorProcess:
    def __init__(
        self,
        kubeconfig: str | os.PathLike[str],
        namespace: str,
        *flags: str,
        env: dict[str, str] | None = None,
        python: str | os.PathLike[str] = sys.executable,
    ) -> None:
        self.arguments = [
            os.fspath(python), "-m", "operator_runtime",
            f"--kubeconfig={os.fspath(kubeconfig)}", f"--watch-namespace={namespace}",
            "--enable-leader-election=false", "--metrics-addr=0",
            "--health-probe-bind-address=0", "--log-stdout-encoder=console",
            "--reconcile-concurrency=2", "--enable-metrics=true", *flags,
        ]  # fmt: skip
        self.env = {**os.environ, **(env or {})}
        self.log_path: Path | None = None
        """Made when the process starts (under pytest's base directory): a test that only
        reads ``arguments`` makes no file."""
        self.process: subprocess.Popen[bytes] | None = None
        self.exit_code: int | None = None

    def __enter__(self) -> OperatorProcess:
        self.log_path = scratch_dir("operator-") / "operator.log"
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                self.arguments, stdout=log, stderr=subprocess.STDOUT, env=self.env
            )
        report_also(self.last_lines)  # in a timed-out wait's line, until __exit__
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        stop_reporting(self.last_lines)
        self.stop()
        if kind is None:
            assert self.exit_code == 0, f"the operator exited {self.exit_code}:\n{self.tail()}"
        else:
            # The test failed inside the block: what the operator was doing then.
            print(f"\nthe operator's last lines:\n{self.tail(80)}")

    def stop(self) -> None:
        process = self.process
        if process is None or self.exit_code is not None:
            return
        self.exit_code = processes.stop(process, grace=60)

    def wait_started(self, timeout: float = START_SECONDS) -> float:
        """Return once the operator says its controllers started (its informers have
        listed), or fail naming what it printed; ``time.monotonic()`` then. A test that
        times what the operator does after a start measures from here: the interpreter's
        start alone took 18 s on a saturated CI machine."""

        def started() -> bool:
            assert self.process is not None and self.process.poll() is None, (
                f"the operator exited before it started:\n{self.tail()}")  # fmt: skip
            return STARTED in self.log()

        wait_for("the operator's controllers started", started, timeout, explain=self.tail)
        return time.monotonic()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path else ""

    def tail(self, lines: int = 60) -> str:
        return "\n".join(self.log().splitlines()[-lines:])

    def last_lines(self, lines: int = 6, width: int = 300) -> str:
        """The log's last lines on one line, each cut to ``width``."""
        cut = [line[:width] for line in self.tail(lines).splitlines()]
        return f"the operator's last lines: {cut}"
