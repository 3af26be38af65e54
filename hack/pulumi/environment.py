"""An offline environment in which the built engine runs a Python Pulumi program.

Everything the engine would otherwise fetch or share is pinned here: the binaries come
first on PATH (the CLI finds its language host beside itself, and the Kubernetes
provider as an ambient plugin on PATH, ahead of any plugin in PULUMI_HOME), state goes
to a local file backend, PULUMI_HOME is private to the state directory, and plugin
downloads and update checks are off, so nothing leaves the machine.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

import yaml

from hack.pulumi.build import Engine, ensure_built

REPO_ROOT = Path(__file__).resolve().parents[2]

TEST_PASSPHRASE = "pulumi-ray-local-engine"
"""Encrypts secrets in the local file backend; a throwaway value for throwaway state."""

UNSET_VARIABLES = (
    # Would make the engine skip the provider we put on PATH.
    "PULUMI_IGNORE_AMBIENT_PLUGINS",
    # Would send the engine to a service instead of the local backend.
    "PULUMI_ACCESS_TOKEN",
    "PULUMI_API",
)


def python_executable() -> Path:
    """The interpreter programs run with: the project's virtualenv, else the current one."""
    venv_python = REPO_ROOT / ".venv" / "bin" / "python"
    return venv_python if venv_python.exists() else Path(sys.executable)


def use_project_virtualenv(work_dir: Path) -> None:
    """Point the Python program in ``work_dir`` (a copy, wherever it lies) at the project's
    virtualenv: its Pulumi.yaml's ``virtualenv`` option, read by language hosts that take
    it from the engine. The v3.79 host we build runs ``PULUMI_PYTHON_CMD`` instead
    (:func:`engine_env`); both name ``.venv``."""
    project_file = work_dir / "Pulumi.yaml"
    project = yaml.safe_load(project_file.read_text())
    runtime = project["runtime"]
    project["runtime"] = {
        "name": runtime if isinstance(runtime, str) else runtime["name"],
        "options": {"virtualenv": str(python_executable().parents[1])},
    }
    project_file.write_text(yaml.safe_dump(project, sort_keys=False))


def engine_env(
    state_dir: Path, engine: Engine | None = None, *, base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """A complete process environment for running the engine against ``state_dir``.

    ``state_dir`` holds PULUMI_HOME (``home/``) and the file backend (``backend/``); both
    are created. ``engine`` defaults to the current pins, built first if not cached;
    ``base`` defaults to this process's environment.
    """
    if engine is None:
        engine = ensure_built()
    environment = dict(os.environ if base is None else base)
    for name in UNSET_VARIABLES:
        environment.pop(name, None)
    home = state_dir / "home"
    backend = state_dir / "backend"
    scratch = state_dir / "tmp"
    for directory in (home, backend, scratch):
        directory.mkdir(parents=True, exist_ok=True)
    _disable_automatic_logs(home)
    python = python_executable()
    path_entries = [str(engine.bin_dir), str(python.parent)]
    environment.update(
        {
            "PATH": os.pathsep.join([*path_entries, environment.get("PATH", "")]),
            "PULUMI_HOME": str(home),
            "PULUMI_BACKEND_URL": backend.as_uri(),
            "PULUMI_CONFIG_PASSPHRASE": TEST_PASSPHRASE,
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
            "PULUMI_SKIP_CONFIRMATIONS": "true",
            # The language host (v3.79) takes no virtualenv from the engine; it runs the
            # program with this interpreter, which is the project's virtualenv.
            "PULUMI_PYTHON_CMD": str(python),
            # The file backend would otherwise suggest migrating to project-scoped stacks.
            "PULUMI_DIY_BACKEND_NO_LEGACY_WARNING": "true",
            # The engine's and its plugins' temporary files, gone with ``state_dir``. The
            # Kubernetes provider writes its kubeconfig to a new temporary file at every
            # start and never removes it (pkg/provider/util.go, writeKubeconfigToFile),
            # and the Node.js host's pipes' directories outlive some runs: 1,109 and 27 of
            # them had piled up in /tmp on one machine.
            "TMPDIR": str(scratch),
        }
    )
    return environment


def _disable_automatic_logs(home: Path) -> None:
    """Keep the CLI from writing its automatic debug log (pkg/v3 >= v3.233.0).

    Every command records every verbose log line, property values included, gzipped,
    into ``$PULUMI_HOME/logs``. With our former CRDs (1-2 MB each) that was ~300 MB and
    more than half the engine's CPU per command (a preview: 68 s with it, 16 s without);
    with today's (0.8 MB together) it is 0.28 MB a command and no longer shows in the CPU
    (benchmarks/README.md, "Where a preview's CPU goes"), but the tests still have no use
    for it. Nothing turns it off, but the CLI carries on without it when it cannot create
    that directory, so a plain file stands in its place.
    """
    logs = home / "logs"
    if logs.is_dir():
        shutil.rmtree(logs)
    if not logs.exists():
        logs.write_text("Not a directory on purpose: see hack/pulumi/environment.py.\n")


def format_env(state_dir: Path, engine: Engine) -> str:
    """Shell ``export`` lines for the variables :func:`engine_env` sets or changes."""
    environment = engine_env(state_dir, engine, base={"PATH": os.environ.get("PATH", "")})
    # A shell that sources these lines runs more than the engine: its own temporary files
    # stay where the user keeps them.
    environment.pop("TMPDIR")
    lines = [f"unset {name}" for name in UNSET_VARIABLES]
    lines += [f"export {name}={_shell_quote(value)}" for name, value in sorted(environment.items())]
    return "\n".join(lines)


def _shell_quote(value: str) -> str:
    return "'" + value.replace("'", "'\"'\"'") + "'"
