"""The engine's pins agree everywhere they are written: versions.py, the wrapper go.mod
files, and the PyPI pins in pyproject.toml (the Python SDKs must match engine and provider).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from hack.pulumi import versions
from hack.pulumi.build import GOMOD_DIR

REPO_ROOT = Path(__file__).resolve().parents[2]


def _required_version(go_mod: str, module: str) -> str:
    match = re.search(rf"^\s*(?:require\s+)?{re.escape(module)} (\S+)", go_mod, re.MULTILINE)
    assert match is not None, f"{module} is not required"
    return match.group(1)


def test_wrapper_modules_pin_the_versions() -> None:
    for wrapper, (module, version) in versions.WRAPPER_MODULES.items():
        go_mod = (GOMOD_DIR / wrapper / "go.mod").read_text()
        assert _required_version(go_mod, module) == version, wrapper
        assert (GOMOD_DIR / wrapper / "go.sum").is_file(), wrapper
    cli = (GOMOD_DIR / "pulumi" / "go.mod").read_text()
    assert _required_version(cli, "github.com/pulumi/pulumi/sdk/v3") == versions.PULUMI
    provider = (GOMOD_DIR / "pulumi-resource-kubernetes" / "go.mod").read_text()
    for module in ("github.com/pulumi/pulumi/pkg/v3", "github.com/pulumi/pulumi/sdk/v3"):
        assert _required_version(provider, module) == versions.KUBERNETES_PROVIDER_PULUMI_SDK


def test_pypi_pins_match_the_engine() -> None:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    dependencies: list[str] = project["project"]["dependencies"]
    for name, version in versions.PYPI_PINS.items():
        assert f"{name}=={version}" in dependencies, (name, version, dependencies)
