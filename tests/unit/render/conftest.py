"""Golden-file plumbing for the render tests.

Inputs live in ``cases/*.yaml`` (a RayCluster manifest, plus an optional top-level
``renderOptions`` block that is not part of the manifest), expected output in
``golden/<case>.yaml``. Golden files change only when the tests run with
``UPDATE_GOLDEN=1``; the resulting diff is reviewed like code.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from operator_runtime.api import FeatureGates, RayCluster
from operator_runtime.render import RenderOptions

HERE = Path(__file__).parent
CASES = HERE / "cases"
GOLDEN = HERE / "golden"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"


class _NoAliasDumper(yaml.SafeDumper):
    """Golden files spell every object out; anchors would hide what a change touched."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def dump(objects: list[dict[str, Any]]) -> str:
    return yaml.dump_all(
        objects, Dumper=_NoAliasDumper, sort_keys=False, width=4096, allow_unicode=True
    )


def load_case(path: Path) -> tuple[RayCluster, RenderOptions]:
    raw = yaml.safe_load(path.read_text())
    settings = dict(raw.pop("renderOptions", None) or {})
    gates = settings.pop("featureGates", "")
    settings["default_container_envs"] = tuple(settings.get("default_container_envs", ()))
    options = RenderOptions(feature_gates=FeatureGates.parse(gates), **settings)
    return RayCluster.model_validate(raw), options


def case_names() -> list[str]:
    return sorted(p.stem for p in CASES.glob("*.yaml"))


@pytest.fixture
def check_golden() -> Callable[[str, str], None]:
    def check(name: str, text: str) -> None:
        path = GOLDEN / f"{name}.yaml"
        if UPDATE:
            path.write_text(text)
            return
        assert path.exists(), f"{path} is missing; run with UPDATE_GOLDEN=1 and review it"
        assert text == path.read_text(), (
            f"render output for {name} differs from {path.name}; if the change is intended, "
            "rerun with UPDATE_GOLDEN=1 and review the diff"
        )

    return check
