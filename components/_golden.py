"""Committed generated files (the package schema, the typed status outputs): write one,
or with ``--check`` say how it differs from what would be written."""

import difflib
import sys
from pathlib import Path

__all__ = ["write_or_check"]


def write_or_check(path: Path, text: str, *, check: bool, remedy: str) -> int:
    """Write ``text`` to the golden file ``path``; with ``check``, write nothing and return
    1 with a unified diff if the file differs (``remedy`` says how to refresh it)."""
    if not check:
        path.write_text(text, encoding="utf-8")
        return 0
    committed = path.read_text(encoding="utf-8") if path.exists() else ""
    if committed == text:
        return 0
    sys.stdout.writelines(
        difflib.unified_diff(
            committed.splitlines(keepends=True),
            text.splitlines(keepends=True),
            str(path),
            "generated",
        )
    )
    print(f"{path.name} is stale: run `{remedy}`", file=sys.stderr)
    return 1
