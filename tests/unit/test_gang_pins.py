"""Each gang scheduler's pin in ``hack.gang.SCHEDULERS`` agrees with its wrapper module."""

from __future__ import annotations

import re

import pytest

from hack import gang


@pytest.mark.parametrize("name", sorted(gang.SCHEDULERS))
def test_wrapper_module_pins_the_version(name: str) -> None:
    scheduler = gang.SCHEDULERS[name]
    go_mod = (gang.GOMOD_DIR / name / "go.mod").read_text()
    module = re.escape(scheduler.module)
    found = re.search(rf"^\s*(?:require\s+)?{module} (\S+)", go_mod, re.MULTILINE)
    assert found is not None and found.group(1) == scheduler.version
    assert f"tool {scheduler.command}" in go_mod
    go_sum = (gang.GOMOD_DIR / name / "go.sum").read_text()
    assert f"{scheduler.module} {scheduler.version} h1:" in go_sum
