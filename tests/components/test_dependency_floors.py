"""The base install at its floors renders every example exactly as the pinned versions do.

``make floor-venv`` builds ``.venv-floor``: ``pip install -e .`` with ``constraints-floor.txt``,
so the base dependencies (no ``operator`` extra) at the lowest versions pyproject.toml
allows. The test runs every example of ``examples/`` under Pulumi's mocks there, through
the installed name (``python -m pulumi_ray render``'s ``main``), and here, at
constraints.txt's pins, and compares the bytes; the same for the package schema that
``pulumi.provider.experimental``'s analyzer infers (what the component provider serves).
Because the floor virtualenv holds the base install alone (the test checks the
operator's packages are absent from it), the same run proves that a Pulumi program
needs none of the operator's dependencies.

A missing floor virtualenv fails the test: it is built outside the sandbox by make.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any, Final

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from hack.localcluster.deployed_operator import NEVER_PULLED_IMAGE
from operator_runtime.__main__ import MISSING_EXIT_CODE, OPERATOR_EXTRA_MODULES
from tests.examples import COMPONENT, CONFIG, EXAMPLES, SECRETS

REPO: Final = Path(__file__).resolve().parents[2]
FLOOR_PYTHON: Final = REPO / ".venv-floor" / "bin" / "python"
FLOOR_CONSTRAINTS: Final = REPO / "constraints-floor.txt"
STACK: Final = "floors"
OPERATOR_ONLY: Final = OPERATOR_EXTRA_MODULES
"""Modules of the ``operator`` extra, which the base install must not bring."""

# Run in each interpreter: renders every program under the directory given, one process
# for all of them (the imports cost more than most renders), the package schema as
# Pulumi's analyzer infers it, and what is installed.
RENDER_ALL: Final = """
import importlib, importlib.metadata, importlib.util, io, json, sys
from pathlib import Path
main = importlib.import_module(sys.argv[1] + ".__main__").main
renders = {}
for program in sorted(Path(sys.argv[2]).iterdir()):
    out, err = io.StringIO(), io.StringIO()
    code = main(["render", str(program), "--stack", sys.argv[3]], stdout=out, stderr=err)
    renders[program.name] = {"exit": code, "stdout": out.getvalue(), "stderr": err.getvalue()}
absent = [m for m in sys.argv[5].split(",") if importlib.util.find_spec(m) is None]
versions = {d: importlib.metadata.version(d) for d in sys.argv[4].split(",")}
schema = importlib.import_module(sys.argv[1] + ".schema").schema_text()
found = {"renders": renders, "schema": schema, "absent": absent, "versions": versions}
json.dump(found, sys.stdout)
"""


def _base_requirements() -> list[Requirement]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return [Requirement(line) for line in project["dependencies"]]


def _floor(requirement: Requirement) -> Version | None:
    floors = [Version(s.version) for s in requirement.specifier if s.operator == ">="]
    return max(floors) if floors else None


def _floor_pins() -> dict[str, Version]:
    pins: dict[str, Version] = {}
    for line in FLOOR_CONSTRAINTS.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==")
            pins[canonicalize_name(name)] = Version(version)
    return pins


def test_constraints_floor_pins_each_base_dependency_at_its_floor() -> None:
    pins = _floor_pins()
    for requirement in _base_requirements():
        floor = _floor(requirement)
        name = canonicalize_name(requirement.name)
        assert name in pins, f"constraints-floor.txt does not pin {requirement.name}"
        if floor is not None:
            assert pins[name] == floor, (
                f"{requirement.name}: pyproject.toml's floor is {floor}, "
                f"constraints-floor.txt installs {pins[name]}"
            )


OPERATOR_CONFIG_PROGRAM: Final = f"""
from pulumi_ray import RayOperator, RayOperatorArgs

RayOperator(
    "ray-operator",
    RayOperatorArgs(
        image="{NEVER_PULLED_IMAGE}",
        operator_config={{"defaultPodLabels": {{"team": "ml"}}, "batchScheduler": ""}},
    ),
)
"""
"""RayOperator with an ``operator_config`` file, which the component checks with the
operator's own parser (operator_runtime.runtime.configuration and .commandline): the
base install must be enough for that too, not only the Kubernetes-client-free examples."""


def _programs(directory: Path) -> Path:
    """Each example program, with a stack file holding the config its README tells a user
    to set (no defaults exist for these: an operator image, a Redis password), and
    ``operator-config``."""
    extra = directory / "operator-config"
    extra.mkdir()
    (extra / "Pulumi.yaml").write_text("name: operator-config\nruntime: python\n")
    (extra / "__main__.py").write_text(OPERATOR_CONFIG_PROGRAM)
    (extra / f"Pulumi.{STACK}.yaml").write_text("config: {}\n")
    for name in COMPONENT:
        copy = directory / name
        shutil.copytree(EXAMPLES / name, copy)
        project = yaml.safe_load((copy / "Pulumi.yaml").read_text())["name"]
        values = {**CONFIG.get(name, {}), **SECRETS.get(name, {})}
        config = {f"{project}:{key}": value for key, value in values.items()}
        (copy / f"Pulumi.{STACK}.yaml").write_text(yaml.safe_dump({"config": config}))
    return directory


def _start(python: Path | str, module: str, programs: Path) -> subprocess.Popen[str]:
    distributions = ",".join(r.name for r in _base_requirements())
    arguments = [module, str(programs), STACK, distributions, ",".join(OPERATOR_ONLY)]
    return subprocess.Popen(
        [str(python), "-c", RENDER_ALL, *arguments],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _result(process: subprocess.Popen[str], label: str) -> dict[str, Any]:
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, f"{label}: exit {process.returncode}\n{stderr[-3000:]}"
    result: dict[str, Any] = json.loads(stdout)
    return result


def test_floor_venv_renders_every_example_as_the_pins_do(tmp_path: Path) -> None:
    if not FLOOR_PYTHON.exists():
        pytest.fail(f"no {FLOOR_PYTHON}: run `make floor-venv` (outside the sandbox) first")
    programs = _programs(tmp_path)
    # Both at once: each is a few seconds of imports and mocked previews.
    # Each waited for and its pipes closed even when the other fails.
    with (
        _start(FLOOR_PYTHON, "pulumi_ray", programs) as floor_run,
        _start(sys.executable, "components", programs) as pinned_run,
    ):
        floor, pinned = _result(floor_run, "floor venv"), _result(pinned_run, "pinned venv")

    assert floor["absent"] == list(OPERATOR_ONLY), "the floor venv holds the operator extra"
    pins = _floor_pins()
    installed = {canonicalize_name(d): Version(v) for d, v in floor["versions"].items()}
    assert installed == {name: pins[name] for name in installed}, "make floor-venv is stale"

    assert sorted(pinned["renders"]) == sorted([*COMPONENT, "operator-config"])
    for name, render in pinned["renders"].items():
        assert render["exit"] == 0, f"{name} (pins): {render['stderr']}"
        if COMPONENT.get(name, "RayOperator") != "RayOperator":  # renders ray.io objects only
            assert re.match(r"# What the operator creates for [1-9]", render["stdout"]), name
        assert floor["renders"][name] == render, f"{name} renders differently at the floors"
    assert floor["schema"] == pinned["schema"], "the analyzer infers another schema at the floors"


def test_ray_operator_in_the_base_install_says_what_to_install() -> None:
    """The base install has the ``ray-operator`` script but not the operator's
    dependencies: starting it is one line naming the extra, not an import traceback."""
    script = FLOOR_PYTHON.parent / "ray-operator"
    if not script.exists():
        pytest.fail(f"no {script}: run `make floor-venv` (outside the sandbox) first")
    started = subprocess.run(
        [str(script), "--version"], capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert started.returncode == MISSING_EXIT_CODE, started.stderr
    assert "pip install 'pulumi-ray[operator]'" in started.stderr
    assert "Traceback" not in started.stderr
    assert started.stderr.count("\n") == 1, started.stderr
