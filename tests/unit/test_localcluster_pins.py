"""The local control plane's pins agree where they are written: versions.py and the
wrapper go.mod/go.sum files (binaries and the Gateway API CRDs alike)."""

from __future__ import annotations

import re

import pytest

from hack.localcluster import versions
from hack.localcluster.build import GOMOD_DIR

PINS = {**versions.WRAPPER_MODULES, **versions.CRD_MODULES}


@pytest.mark.parametrize("wrapper", sorted(PINS))
def test_wrapper_module_pins_the_version(wrapper: str) -> None:
    module, version = PINS[wrapper]
    go_mod = (GOMOD_DIR / wrapper / "go.mod").read_text()
    found = re.search(rf"^\s*(?:require\s+)?{re.escape(module)} (\S+)", go_mod, re.MULTILINE)
    assert found is not None, f"{wrapper}: {module} is not required"
    assert found.group(1) == version
    go_sum = (GOMOD_DIR / wrapper / "go.sum").read_text()
    assert f"{module} {version} h1:" in go_sum, f"{wrapper}: go.sum has no hash of {module}"
