"""``operator_runtime.__main__``: the check in front of the operator process."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from operator_runtime import __main__ as entry

PYPROJECT = Path(__file__).resolve().parents[3] / "pyproject.toml"


def test_the_checked_modules_are_the_operator_extra() -> None:
    extras = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]
    declared = [Requirement(r).name.replace("-", "_") for r in extras["operator"]]
    assert list(entry.OPERATOR_EXTRA_MODULES) == declared


def test_a_missing_dependency_is_one_line_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(entry, "OPERATOR_EXTRA_MODULES", ("httpx", "no_such_module_here"))
    assert entry.main(["--version"]) == entry.MISSING_EXIT_CODE
    error = capsys.readouterr().err
    assert error == (
        "ray-operator: the operator's dependencies are not installed (no module "
        "no_such_module_here); install them with: pip install 'pulumi-ray[operator]'\n"
    )


def test_with_its_dependencies_it_runs_the_operator(capsys: pytest.CaptureFixture[str]) -> None:
    assert entry.main(["--version"]) == 0
    assert capsys.readouterr().out.strip()
