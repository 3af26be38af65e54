"""The components install as ``pulumi_ray``: what a Pulumi program imports.

The folder is ``components/`` (the repository's layout), but a program's own
``components/`` folder, common in Pulumi projects, would shadow an import of that name.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_package_list_names_every_package_folder() -> None:
    """pyproject lists the packages by hand (discovery cannot rename a folder); a new
    subpackage left out would be missing from the wheel and fail only at a user's import.
    Data folders are listed too, or setuptools warns at every build that they are not."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    on_disk = set()
    for folder, installed_as in (("components", "pulumi_ray"), ("operator_runtime", None)):
        # Every folder: a package, or one of package data (the CRDs, the JSON schemas).
        for path in [ROOT / folder, *(ROOT / folder).rglob("*")]:
            if not path.is_dir() or path.name == "__pycache__":
                continue
            dotted = ".".join(path.relative_to(ROOT).parts)
            on_disk.add(dotted.replace(folder, installed_as, 1) if installed_as else dotted)
    assert set(setuptools["packages"]) == on_disk
    assert setuptools["package-dir"] == {"pulumi_ray": "components"}


def test_a_programs_own_components_folder_does_not_shadow_pulumi_ray(tmp_path: Path) -> None:
    program = tmp_path / "program"
    (program / "components").mkdir(parents=True)
    (program / "components" / "__init__.py").write_text("raise ImportError('the user one')\n")
    code = (
        "import sys; sys.path.insert(0, '.')\n"
        "from pulumi_ray import RayCluster, RayOperator\n"
        "import pulumi_ray.schema as s\n"
        "print(RayCluster.__module__, RayOperator.__module__, s.SCHEMA_FILE.is_file())\n"
    )
    # cwd is the program's folder, as when the engine runs a Pulumi program.
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=program, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["pulumi_ray.cluster", "pulumi_ray.operator.component", "True"]
