"""Where the test helpers' own files go: under pytest's base temporary directory.

Pytest keeps the base directories of its last three runs and deletes older ones, so an
operator's log or a pod runner's scratch is there to read after a failing run and gone
a few runs later. Made loose in ``/tmp`` instead, they outlived every run (1,857
operator logs and 182 pod runner directories had piled up on one machine).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

_root: Path | None = None


def use_root(root: Path) -> None:
    """Called once per test process, by the session fixture in ``tests/conftest.py``."""
    global _root
    _root = root


def _require_root() -> Path:
    if _root is None:
        raise RuntimeError("the test helpers' scratch is pytest's base temporary directory: "
                           "run them under pytest (tests/conftest.py sets it)")  # fmt: skip
    return _root


def scratch_dir(prefix: str) -> Path:
    """A new empty directory of this process's run; pytest's retention removes it."""
    return Path(tempfile.mkdtemp(prefix=prefix, dir=_require_root()))
