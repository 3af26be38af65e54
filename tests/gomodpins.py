"""The one check of a wrapper Go module's pin, for every family that builds from one."""

from __future__ import annotations

import re
from pathlib import Path


def assert_wrapper_pins(gomod_dir: Path, wrapper: str, module: str, version: str) -> None:
    """``gomod_dir/wrapper``'s go.mod requires ``module`` at ``version`` and its go.sum
    holds that version's hash."""
    go_mod = (gomod_dir / wrapper / "go.mod").read_text()
    found = re.search(rf"^\s*(?:require\s+)?{re.escape(module)} (\S+)", go_mod, re.MULTILINE)
    assert found is not None, f"{wrapper}: {module} is not required"
    assert found.group(1) == version
    go_sum = (gomod_dir / wrapper / "go.sum").read_text()
    assert f"{module} {version} h1:" in go_sum, f"{wrapper}: go.sum has no hash of {module}"
