"""``python -m hack.sandbox -- CMD [ARGS...]`` | ``python -m hack.sandbox --shell``.

Runs CMD (or an interactive shell beside a local control plane) in the sandbox described
in ``hack/sandbox/__init__.py``. Exits with CMD's exit code; exits 125 with one line when
this machine cannot make the sandbox. There is no fallback to running outside.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from hack.sandbox import inside
from hack.sandbox.namespace import SandboxUnavailable, enter, set_up

UNAVAILABLE_EXIT = 125
"""Like env(1) and docker: the wrapper, not the command, failed."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m hack.sandbox",
        description="Run a command in a private network namespace where kwok's pod, node "
        "and service addresses are routed to loopback and nothing else is reachable.",
        epilog="example: python -m hack.sandbox -- .venv/bin/python -m pytest tests/integration",
    )
    parser.add_argument(
        "--shell",
        action="store_true",
        help="start the local control plane and an interactive shell with KUBECONFIG and "
        "kubectl set; both stop when the shell exits",
    )
    parser.add_argument("--inside", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- CMD [ARGS...]")
    return parser


def main(argv: list[str] | None = None) -> int:
    arguments = _parser().parse_args(argv)
    command: list[str] = arguments.command
    if command[:1] == ["--"]:
        command = command[1:]
    if bool(command) == arguments.shell:
        _parser().error("give either `-- CMD [ARGS...]` or `--shell`")
    try:
        if arguments.inside is not None:
            set_up(arguments.inside)
        elif not inside():
            return enter(["--shell"] if arguments.shell else ["--", *command])
    except SandboxUnavailable as error:
        print(f"hack.sandbox: cannot make the sandbox: {error}", file=sys.stderr)
        return UNAVAILABLE_EXIT
    if arguments.shell:
        from hack.sandbox.shell import run_shell

        return run_shell()
    try:
        os.execvp(command[0], command)
    except OSError as error:
        print(f"hack.sandbox: cannot run {command[0]!r}: {error.strerror}", file=sys.stderr)
        return 127


if __name__ == "__main__":
    sys.exit(main())
