"""The local control plane's pins agree where they are written: versions.py and the
wrapper go.mod/go.sum files (binaries and the Gateway API CRDs alike)."""

from __future__ import annotations

import pytest

from hack.localcluster import versions
from hack.localcluster.build import GOMOD_DIR
from tests.gomodpins import assert_wrapper_pins

PINS = {**versions.WRAPPER_MODULES, **versions.CRD_MODULES}


@pytest.mark.parametrize("wrapper", sorted(PINS))
def test_wrapper_module_pins_the_version(wrapper: str) -> None:
    assert_wrapper_pins(GOMOD_DIR, wrapper, *PINS[wrapper])
