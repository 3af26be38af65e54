"""Each workload example is a Pulumi program that runs under mocks with its default config
and registers the custom resource it is about (the e2e tier previews them for real)."""

from __future__ import annotations

import runpy
from typing import Any

import pytest

from tests.components.workload_mocks import run, secret_paths
from tests.examples import EXAMPLES, WORKLOAD_EXAMPLES

KINDS = WORKLOAD_EXAMPLES


@pytest.mark.parametrize("example", sorted(KINDS))
def test_example_registers_its_custom_resource(example: str) -> None:
    directory = EXAMPLES / example
    assert (directory / "Pulumi.yaml").is_file()
    readme = (directory / "README.md").read_text().strip()
    assert readme and "\n" not in readme

    def program() -> Any:
        runpy.run_path(str(directory / "__main__.py"), run_name="__main__")

    result = run(program)
    kind = KINDS[example]
    cr = result.one(f"kubernetes:ray.io/v1:{kind}")
    assert cr.parent == result.one(f"pulumi-ray:index:{kind}").urn


def test_the_gcs_ft_password_is_only_ever_a_secret() -> None:
    result = run(lambda: runpy.run_path(str(EXAMPLES / "gcs-ft-redis" / "__main__.py")))
    secret = result.one("kubernetes:core/v1:Secret")
    assert list(secret_paths(secret.raw)) == ["stringData"]
    assert secret.inputs["stringData"] == {"password": "change-me"}
    cluster = result.one("kubernetes:ray.io/v1:RayCluster").inputs
    assert "change-me" not in repr(cluster)
    password = cluster["spec"]["gcsFaultToleranceOptions"]["redisPassword"]
    assert password["valueFrom"]["secretKeyRef"]["key"] == "password"


def test_the_readme_opens_with_the_quickstart_example() -> None:
    """The README's ten lines are the example the tests run, not a copy that drifts."""
    readme = (EXAMPLES.parent / "README.md").read_text()
    block = readme.split("```python\n", 1)[1].split("```", 1)[0]
    program = (EXAMPLES / "quickstart" / "__main__.py").read_text()
    assert block == program
    assert len([line for line in program.splitlines() if line.strip()]) <= 12
