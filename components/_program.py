"""Run a Pulumi program in this process, without an engine or a cluster, and keep what it
registers.

The program runs as the Python language host would run it (its directory as the working
directory and first on ``sys.path``, ``__main__.py`` as ``__main__``) but against
``pulumi.runtime.set_mocks`` in preview mode: every resource is "created" by echoing its
inputs back as outputs, so values that flow from one resource into another (a Namespace's
name into a RayCluster) are known, and only what a real provider would compute later
(``status``) stays unknown.

Each registration is kept in wire form, as the engine would receive it: a secret is still
wrapped where it sits, and an unknown value is still the engine's sentinel. Resolving the
inputs the usual way would lift a nested secret up to its top-level property and turn
unknowns into None, and the caller must tell both apart from plain values.

Everything the run changes is put back: the Pulumi settings and config live in a copied
``contextvars`` context, and the program's own modules are dropped from ``sys.modules``
so a second program with a module of the same name gets its own.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import os
import runpy
import sys
import threading
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pulumi
import pulumi.runtime

# protobuf ships no type stubs; only MessageToDict is used, and its result is checked.
from google.protobuf import json_format  # type: ignore[import-untyped]
from pulumi.runtime import settings as pulumi_settings
from pulumi.runtime.mocks import MockMonitor
from pulumi.runtime.stack import run_in_stack

from operator_runtime.api.useryaml import UserYamlError, load_yaml, load_yaml_all

from ._offline import OFFLINE

__all__ = [
    "AUTONAME_SUFFIX",
    "ENCRYPTED_CONFIG",
    "SECRET_SIG",
    "SIG",
    "UNKNOWN",
    "Program",
    "ProgramError",
    "Registration",
    "load_program",
    "run_program",
]

# Constants of the Pulumi wire protocol (the same in every language SDK): the key that
# marks a special object, the signature of a secret, and the string for "not known yet".
SIG: Final = "4dabf18193072939515e22adb298388d"
SECRET_SIG: Final = "1b47061264138c4ac30d75fd1eb44270"
UNKNOWN: Final = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"

AUTONAME_SUFFIX: Final = "autonam3"
"""Stands in for the random suffix pulumi-kubernetes adds to a nameless object's
resource name: eight lowercase characters, so a name keeps its real length and stays
a valid DNS label while it is validated and rendered."""
ENCRYPTED_CONFIG: Final = "encrypt3d"
"""The value of a ``secure:`` stack config key, which only the engine can decrypt."""


class ProgramError(Exception):
    """The program could not be loaded or raised; ``str()`` is the whole message."""


@dataclass(frozen=True)
class Registration:
    type: str
    name: str
    raw: dict[str, Any]
    """Inputs in wire form: secrets wrapped in place, unknowns as ``UNKNOWN``."""


@dataclass(frozen=True)
class Program:
    directory: Path
    main: Path
    project: str
    stack: str
    config: Mapping[str, str]
    secret_keys: tuple[str, ...]


def load_program(directory: Path, stack: str | None) -> Program:
    """Read Pulumi.yaml (project name, ``main``, config defaults) and, with ``stack``,
    Pulumi.<stack>.yaml (its config; encrypted values become secrets nobody can read)."""
    project_file = directory / "Pulumi.yaml"
    project_doc = _read_yaml(project_file)
    project = project_doc.get("name")
    if not isinstance(project, str) or not project:
        raise ProgramError(f"{project_file}: no project name")
    main_dir = directory / str(project_doc.get("main") or ".")
    main = main_dir if main_dir.suffix == ".py" else main_dir / "__main__.py"
    if not main.is_file():
        raise ProgramError(f"{directory}: no {main.relative_to(directory)} to run")
    config: dict[str, str] = {}
    secret_keys: list[str] = []
    for key, declared in (project_doc.get("config") or {}).items():
        # A declaration with a default, or a bare value, is what the engine would pass
        # when the stack sets nothing.
        value = declared.get("default") if isinstance(declared, dict) else declared
        if value is not None:
            config[_qualified(project, key)] = _config_string(value)
    if stack is not None:
        stack_file = directory / f"Pulumi.{stack}.yaml"
        for key, value in (_read_yaml(stack_file).get("config") or {}).items():
            name = _qualified(project, key)
            if isinstance(value, dict) and set(value) == {"secure"}:
                # Only the engine holds the key to decrypt it; the value is a secret
                # either way, so what it is does not show in the render.
                config[name] = ENCRYPTED_CONFIG
                secret_keys.append(name)
            else:
                config[name] = _config_string(value)
    return Program(
        directory=directory.resolve(),
        main=main.resolve(),
        project=project,
        stack=stack or "render",
        config=config,
        secret_keys=tuple(secret_keys),
    )


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        document = load_yaml(path.read_text())
    except (OSError, UserYamlError) as error:
        raise ProgramError(f"cannot read {path}: {error}") from None
    if not isinstance(document, dict):
        raise ProgramError(f"{path}: expected a mapping at the top")
    return document


def _qualified(project: str, key: object) -> str:
    text = str(key)
    return text if ":" in text else f"{project}:{text}"


def _config_string(value: object) -> str:
    # The language host hands every config value to the program as a string: objects and
    # lists as JSON, booleans as true/false, numbers in decimal.
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True)
    return str(value)


class _Monitor(MockMonitor):
    """MockMonitor that also keeps each registration's inputs in wire form."""

    def __init__(self, mocks: pulumi.runtime.Mocks) -> None:
        super().__init__(mocks)
        self.registrations: list[tuple[int, Registration]] = []
        self._lock = threading.Lock()

    def RegisterResource(self, request: Any) -> Any:
        if request.type != "pulumi:pulumi:Stack":
            raw = json_format.MessageToDict(request.object)
            with self._lock:
                # Registrations arrive from worker threads; the sequence number keeps
                # them in the order the monitor saw them.
                self.registrations.append(
                    (len(self.registrations), Registration(request.type, request.name, raw))
                )
        return super().RegisterResource(request)  # type: ignore[no-untyped-call]


class _Mocks(pulumi.runtime.Mocks):
    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        state = dict(args.inputs)
        if args.typ.startswith("kubernetes:") and not args.typ.startswith("kubernetes:helm"):
            # As pulumi-kubernetes does in a preview: a nameless object gets its resource
            # name plus a random suffix (here a fixed stand-in), in the provider's
            # default namespace.
            given = state.get("metadata")
            metadata = dict(given) if isinstance(given, dict) else {}
            metadata.setdefault("name", f"{args.name}-{AUTONAME_SUFFIX}")
            state["metadata"] = metadata
        return f"{args.name}-id", state

    def call(
        self, args: pulumi.runtime.MockCallArgs
    ) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        if args.token == "kubernetes:yaml:decode":
            # pulumi_kubernetes.yaml.ConfigFile/ConfigGroup parse their YAML through the
            # provider; answering here lets manifests applied that way be rendered too.
            text = args.args.get("text") or ""
            # Read as the provider reads it (apimachinery's YAML), within the bounds.
            return {"result": [d for d in load_yaml_all(text) if d is not None]}, []
        return {}, []


def run_program(program: Program) -> list[Registration]:
    """Every resource the program registers, in registration order.

    Raises ``ProgramError`` with the program's own message if it fails (including an
    error raised inside an ``apply``)."""
    mocks = _Mocks()
    monitor = _Monitor(mocks)
    context = contextvars.copy_context()
    with _as_language_host(program.directory):
        context.run(_run, program, mocks, monitor)
    return [registration for _, registration in sorted(monitor.registrations)]


def _run(program: Program, mocks: _Mocks, monitor: _Monitor) -> None:
    # A loop of our own, set before set_mocks: the root Stack it registers schedules its
    # RPC on the current loop, and run_in_stack later waits for that RPC. It is set
    # under a policy of its own, and the caller's policy (with whatever loop the caller
    # had, or none yet) is put back after: unsetting the loop instead would leave a
    # caller that later asks for the current loop with none.
    callers_policy = asyncio.get_event_loop_policy()
    asyncio.set_event_loop_policy(asyncio.DefaultEventLoopPolicy())
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    worker_loops: list[asyncio.AbstractEventLoop] = []
    loop.set_default_executor(
        ThreadPoolExecutor(initializer=_give_thread_a_loop, initargs=(worker_loops,))
    )
    # In the context run_program made for this run: the components know they run offline.
    OFFLINE.set(True)
    try:
        pulumi.runtime.set_mocks(
            mocks, project=program.project, stack=program.stack, preview=True, monitor=monitor
        )
        pulumi.runtime.set_all_config(dict(program.config), list(program.secret_keys))
        # The language host makes a fresh root Stack around the program, as run_in_stack
        # does; set_mocks's own would refuse a second one.
        pulumi_settings.ROOT.set(None)
        pulumi_settings.SETTINGS.root_directory = str(program.directory)
        loop.run_until_complete(run_in_stack(lambda: _run_main(program.main)))
    except ProgramError:
        raise
    except Exception as error:
        raise ProgramError(_describe(error, program.directory)) from error
    finally:
        loop.run_until_complete(loop.shutdown_default_executor())
        for worker_loop in (*worker_loops, loop):
            worker_loop.close()
        asyncio.set_event_loop_policy(callers_policy)


def _give_thread_a_loop(loops: list[asyncio.AbstractEventLoop]) -> None:
    # The mock monitor runs in executor threads and asks each for an event loop; one
    # made here is known, so it is closed when the run ends instead of being left to
    # the garbage collector (a ResourceWarning) when its thread exits.
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    loops.append(loop)


def _run_main(main: Path) -> None:
    runpy.run_path(str(main), run_name="__main__")


def _describe(error: BaseException, directory: Path) -> str:
    """The error as one message: alone for Pulumi's RunError (the components' input
    errors are RunErrors, printed without a traceback by the real language host too),
    otherwise with its type and the program line it came from."""
    if isinstance(error, pulumi.RunError):
        return str(error)
    where = ""
    traceback = error.__traceback__
    while traceback is not None:
        filename = Path(traceback.tb_frame.f_code.co_filename)
        if filename.is_relative_to(directory):
            where = f" (at {filename.relative_to(directory)}:{traceback.tb_lineno})"
        traceback = traceback.tb_next
    return f"{type(error).__name__}: {error}{where}"


@contextmanager
def _as_language_host(directory: Path) -> Iterator[None]:
    """The program's directory as cwd and first on sys.path; undone afterwards, with the
    modules the program imported from its own directory forgotten."""
    previous_cwd = os.getcwd()
    previous_path = list(sys.path)
    before = set(sys.modules)
    os.chdir(directory)
    sys.path.insert(0, str(directory))
    try:
        yield
    finally:
        os.chdir(previous_cwd)
        sys.path[:] = previous_path
        for name in set(sys.modules) - before:
            filename = getattr(sys.modules[name], "__file__", None)
            if filename and Path(filename).resolve().is_relative_to(directory):
                del sys.modules[name]
