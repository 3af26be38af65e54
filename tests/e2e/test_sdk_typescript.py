"""The TypeScript SDK of our package: generated from components/schema.json, compiled as
the npm package it would publish, and a consumer (examples/typescript-quickstart) that
type-checks against it, while the same consumer with a misspelled field does not.

This is what a TypeScript user of the package relies on: the schema's names and types
reach their editor and compiler. The program's run through the engine is
test_consumers.py's.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from hack.pulumi import sdk

# tsc of the SDK and of the consumer take seconds each, more on a loaded machine.
pytestmark = pytest.mark.timeout(600)


@dataclass(frozen=True)
class Consumer:
    """A copy of the example, its node_modules linked to the cache and the compiled SDK."""

    root: Path
    sdk_package: Path

    def program(self, name: str, *, replace: tuple[str, str] | None = None) -> Path:
        """A copy of the example's program (its index.ts changed by ``replace``)."""
        program = self.root / name
        shutil.copytree(
            sdk.TYPESCRIPT_EXAMPLE,
            program,
            ignore=shutil.ignore_patterns("node_modules", "bin"),
        )
        if replace is not None:
            index = program / "index.ts"
            text = index.read_text()
            assert replace[0] in text, replace
            index.write_text(text.replace(replace[0], replace[1], 1))
        sdk.link_node_modules(program, self.sdk_package)
        return program


@pytest.fixture(scope="module")
def consumer(tmp_path_factory: pytest.TempPathFactory) -> Consumer:
    root = tmp_path_factory.mktemp("typescript-sdk")
    started = time.monotonic()
    sdk.generate("nodejs", root / "sdk")
    generated = time.monotonic()
    package = sdk.compile_typescript_sdk(root / "sdk")
    print(
        f"TypeScript SDK: generated in {generated - started:.2f}s, "
        f"compiled in {time.monotonic() - generated:.1f}s"
    )
    return Consumer(root=root, sdk_package=package)


def test_the_sdk_is_the_package_the_schema_names(consumer: Consumer) -> None:
    package = consumer.sdk_package
    assert (package / "package.json").read_text().count(f'"name": "{sdk.npm_package_name()}"') == 1
    for component in ("RayOperator", "RayCluster", "RayJob", "RayService", "RayCronJob"):
        declaration = package / f"{component[0].lower()}{component[1:]}.d.ts"
        assert f"class {component} extends pulumi.ComponentResource" in declaration.read_text()


def test_the_sdk_asks_for_the_typescript_it_is_compiled_with(consumer: Consumer) -> None:
    """The generated package.json names the compiler the tests use (the quickstart's
    devDependency), not the generator's default ``^4.7.0``."""
    import json

    tested = json.loads((sdk.TYPESCRIPT_EXAMPLE / "package.json").read_text())
    generated = json.loads((consumer.sdk_package / "package.json").read_text())
    asked = {**generated.get("devDependencies", {}), **generated.get("dependencies", {})}
    assert asked["typescript"] == "^" + tested["devDependencies"]["typescript"], asked


def test_the_quickstart_type_checks(consumer: Consumer) -> None:
    program = consumer.program("quickstart")
    started = time.monotonic()
    result = sdk.tsc(program, "--noEmit")
    print(f"tsc --noEmit of the quickstart: {time.monotonic() - started:.1f}s")
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_misspelled_field_fails_type_checking(consumer: Consumer) -> None:
    """The check can fail: tsc refuses a field RayClusterArgs does not have, naming it."""
    program = consumer.program(
        "misspelled", replace=('namespace: "default"', 'namespase: "default"')
    )
    result = sdk.tsc(program, "--noEmit")
    assert result.returncode != 0, result.stdout
    assert "'namespase' does not exist in type 'RayClusterArgs'" in result.stdout, result.stdout


def test_a_wrongly_typed_field_fails_type_checking(consumer: Consumer) -> None:
    """Types come through too: RayOperator's ``replicas`` is an integer in the schema."""
    program = consumer.program(
        "wrong-type",
        replace=(
            'new ray.RayOperator("ray-operator", {',
            'new ray.RayOperator("ray-operator", { replicas: "two",',
        ),
    )
    result = sdk.tsc(program, "--noEmit")
    assert result.returncode != 0, result.stdout
    assert "Type 'string' is not assignable to type 'number'" in result.stdout, result.stdout


def test_a_misspelled_status_field_fails_type_checking(consumer: Consumer) -> None:
    """The quickstart reads ``cluster.status.state`` with no cast: the status is the
    schema's RayClusterStatus, so tsc refuses a field it does not have."""
    assert (
        "export const state = cluster.status.state;"
        in (sdk.TYPESCRIPT_EXAMPLE / "index.ts").read_text()
    )
    program = consumer.program(
        "misspelled-status", replace=("cluster.status.state;", "cluster.status.stat;")
    )
    result = sdk.tsc(program, "--noEmit")
    assert result.returncode != 0, result.stdout
    assert "Property 'stat' does not exist on type" in result.stdout, result.stdout
    assert "RayClusterStatus" in result.stdout, result.stdout
