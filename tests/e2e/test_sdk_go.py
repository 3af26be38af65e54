"""The Go SDK of our package: generated from components/schema.json, it compiles, and a
consumer (examples/go-quickstart) builds against it, while the same consumer with a
misspelled field does not.

Everything builds from the module cache alone (GOPROXY=off; `make sdk-deps` filled it
before the sandbox). The program's run through the engine is test_consumers.py's.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from hack.pulumi import sdk

# A cold build of the Pulumi Go SDK takes minutes on two shared cores; warm, seconds.
pytestmark = pytest.mark.timeout(1200)


@pytest.fixture(scope="module")
def generated_sdk(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("go-sdk") / "sdk"
    started = time.monotonic()
    sdk.generate("go", out)
    print(f"Go SDK: generated in {time.monotonic() - started:.2f}s")
    return out


def _go_build(program: Path, *packages: str) -> subprocess.CompletedProcess[str]:
    started = time.monotonic()
    result = sdk.go_build(program, *packages)
    print(f"go build {' '.join(packages)}: {time.monotonic() - started:.1f}s")
    return result


def test_the_sdk_and_the_quickstart_build(generated_sdk: Path, tmp_path: Path) -> None:
    program = sdk.copy_go_example(tmp_path / "program", generated_sdk)
    # Every package of the SDK (ray and ray/internal), then the program itself.
    result = _go_build(program, f"{sdk.go_module_path()}/...")
    # "module lookup disabled by GOPROXY=off": the module cache lacks what `make sdk-deps` gets.
    assert result.returncode == 0, f"{result.stderr}\n(is `make {sdk.MAKE_TARGET}` done?)"
    result = _go_build(program, ".")
    assert result.returncode == 0, result.stderr


def test_a_misspelled_field_fails_the_build(generated_sdk: Path, tmp_path: Path) -> None:
    """The check can fail: the compiler refuses a field RayClusterArgs does not have."""
    program = sdk.copy_go_example(tmp_path / "program", generated_sdk)
    main = program / "main.go"
    text = main.read_text()
    assert "Namespace: " in text
    main.write_text(text.replace("Namespace: ", "Namespase: ", 1))
    result = _go_build(program, ".")
    assert result.returncode != 0, result.stderr
    assert "unknown field Namespase in struct literal of type ray.RayClusterArgs" in result.stderr


def test_a_misspelled_status_accessor_fails_the_build(generated_sdk: Path, tmp_path: Path) -> None:
    """The quickstart exports ``cluster.Status.State()``, the typed accessor of
    RayClusterStatusOutput (its build is the test above); a misspelled one does not build."""
    program = sdk.copy_go_example(tmp_path / "program", generated_sdk)
    main = program / "main.go"
    text = main.read_text()
    assert "cluster.Status.State()" in text
    main.write_text(text.replace("cluster.Status.State()", "cluster.Status.Stat()", 1))
    result = _go_build(program, ".")
    assert result.returncode != 0, result.stderr
    assert "cluster.Status.Stat undefined (type ray.RayClusterStatusOutput" in result.stderr, (
        result.stderr
    )
