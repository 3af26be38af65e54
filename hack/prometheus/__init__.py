"""A real Prometheus (and its promtool) for the observability tests: Debian bookworm's
``prometheus`` package, pinned in ``debian.lock`` and extracted, never installed.

Only the package itself is locked, not its dependencies: the two binaries link nothing
but the host's libc, and what the package depends on besides (JavaScript for the web
UI, adduser, init-system helpers for the service) is what an installed service needs,
not a process a test starts. ``python -m hack.prometheus fetch`` (``make prometheus``,
a dependency of ``make test``) downloads it outside the sandbox through the image's
fetcher (``hack.image.debian``: the sha256 comes from apt's signed indexes); in the
sandbox ``ensure()`` only finds it, or fails naming the make target.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hack import gobuild, processes, sandbox
from hack.image import debian

PACKAGE = "prometheus"
LOCK_FILE = Path(__file__).resolve().parent / "debian.lock"
REFRESH = (
    "refresh the lock with `python -m hack.prometheus lock` and commit hack/prometheus/debian.lock"
)
START_TIMEOUT = 60.0
"""From exec to ``/-/ready``: it replays an empty write-ahead log; seconds even loaded."""

__all__ = ["Prometheus", "ensure", "lock", "start"]


def _locked() -> debian.Package:
    (package,) = debian.read_lock(LOCK_FILE)
    return package


def lock() -> debian.Package:
    """Pin apt's current candidate of the package in ``debian.lock``."""
    (package,) = debian.locate((PACKAGE,))
    LOCK_FILE.write_text(
        "# Debian's prometheus package (python -m hack.prometheus lock writes this; commit it).\n"
        "# Only the package: its binaries need the host's libc alone (hack/prometheus says why).\n"
        "# package version arch sha256 size url\n"
        f"{package.line()}\n"
    )
    return package


@dataclass(frozen=True)
class Tools:
    root: Path

    @property
    def prometheus(self) -> Path:
        return self.root / "usr/bin/prometheus"

    @property
    def promtool(self) -> Path:
        return self.root / "usr/bin/promtool"

    @property
    def complete(self) -> bool:
        return self.prometheus.is_file() and self.promtool.is_file()


def _tools() -> Tools:
    package = _locked()
    return Tools(gobuild.cache_root() / "prometheus" / f"{package.version}-{package.sha256[:10]}")


def ensure() -> Tools:
    """The extracted package, fetching and extracting it first if needed (not in the
    sandbox, which has no network)."""
    tools = _tools()
    if tools.complete:
        return tools
    if sandbox.inside():
        raise RuntimeError(
            f"Prometheus is not extracted under {tools.root} and the sandbox has no network "
            "to fetch it: run `make prometheus` first (outside the sandbox)"
        )
    package = _locked()
    (deb,) = debian.fetch([package], tools.root.parent / "debs", REFRESH)
    staging = Path(tempfile.mkdtemp(prefix=".extracting-", dir=tools.root.parent))
    try:
        subprocess.run(["dpkg-deb", "--extract", str(deb), str(staging)], check=True)
        shutil.rmtree(tools.root, ignore_errors=True)
        staging.rename(tools.root)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    if not tools.complete:
        raise RuntimeError(f"{deb.name} has no usr/bin/prometheus and usr/bin/promtool")
    return tools


@dataclass
class Prometheus:
    """One running server on loopback; ``stop()`` ends it."""

    running: processes.Running
    port: int

    @property
    def process(self) -> subprocess.Popen[bytes]:
        assert self.running.process is not None  # launched here, never adopted
        return self.running.process

    @property
    def log_path(self) -> Path:
        return self.running.spec.log

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log_tail(self, lines: int = 40) -> str:
        return self.running.tail(lines)

    def stop(self) -> None:
        processes.stop(self.process, self.running.spec.grace)


def start(config: Path, data_dir: Path, port: int, log_path: Path) -> Prometheus:
    """Run Prometheus with ``config`` on ``127.0.0.1:port`` and wait until it is ready."""
    sandbox.require_inside("Prometheus")
    binary = ensure().prometheus
    # The log is truncated first: one server per log file, as before the shared shape,
    # whose launch appends.
    log_path.write_bytes(b"")
    spec = processes.Spec(
        name="prometheus",
        argv=[
            str(binary),
            f"--config.file={config}",
            f"--storage.tsdb.path={data_dir}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=warn",
        ],
        log=log_path,
        cwd=data_dir,
        ready=lambda: processes.http_ok(f"http://127.0.0.1:{port}/-/ready"),
        ready_timeout=START_TIMEOUT,
        grace=30,
    )
    supervisor = processes.Supervisor("Prometheus")
    try:
        running = supervisor.start(spec)
    except (RuntimeError, TimeoutError) as error:
        supervisor.stop_all()
        raise RuntimeError(str(error)) from error
    return Prometheus(running, port)
