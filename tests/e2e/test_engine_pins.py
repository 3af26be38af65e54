"""The engine's pins agree everywhere they are written: versions.py, the wrapper go.mod
files, and the Python SDKs the tests install (constraints.txt), which must match engine
and provider and lie inside the ranges pyproject.toml declares.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from hack.pulumi import versions
from hack.pulumi.build import BINARIES, GOMOD_DIR

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


def test_every_wrapper_module_is_a_built_binary() -> None:
    wrappers = {path.name for path in GOMOD_DIR.iterdir() if (path / "go.mod").is_file()}
    assert wrappers == set(versions.WRAPPER_MODULES)
    assert wrappers <= set(BINARIES)


def test_python_sdk_is_not_newer_than_the_cli() -> None:
    """An SDK newer than the engine may send RPC fields the engine does not know yet."""
    sdk = Version(versions.PYTHON_SDK)
    cli = Version(versions.PULUMI.removeprefix("v"))
    assert sdk <= cli
    assert sdk.major == cli.major


def test_pypi_pins_match_the_engine() -> None:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    ranges = {
        canonicalize_name(r.name): r for r in map(Requirement, project["project"]["dependencies"])
    }
    lines = (REPO_ROOT / "constraints.txt").read_text().splitlines()
    pinned = {
        canonicalize_name(r.name): r
        for r in map(Requirement, (line for line in lines if line and not line.startswith("#")))
    }
    for name, version in versions.PYPI_PINS.items():
        key = canonicalize_name(name)
        assert str(pinned[key].specifier) == f"=={version}", (name, pinned[key], version)
        assert ranges[key].specifier.contains(version), (name, ranges[key], version)
