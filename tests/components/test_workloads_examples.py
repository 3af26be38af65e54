"""Each workload example is a Pulumi program that runs under mocks with its default config
and registers the custom resource it is about (the e2e tier previews them for real)."""

from __future__ import annotations

import runpy
from typing import Any

import pulumi
import pytest

from tests.components.workload_mocks import Run, run, secret_paths
from tests.examples import CONFIG, EXAMPLES, SECRETS, WORKLOAD_EXAMPLES

KINDS = WORKLOAD_EXAMPLES


def run_example(example: str, secrets: dict[str, str] | None = None) -> Run:
    """The example's program under mocks, with ``secrets`` (default: those its README
    asks for) set as secret stack config of the mocks' project."""
    given = SECRETS.get(example, {}) if secrets is None else secrets
    config = {f"project:{key}": value for key, value in given.items()}
    plain = {f"project:{key}": value for key, value in CONFIG.get(example, {}).items()}

    def program() -> Any:
        pulumi.runtime.set_all_config({**plain, **config}, list(config))
        runpy.run_path(str(EXAMPLES / example / "__main__.py"), run_name="__main__")

    try:
        return run(program)
    finally:
        pulumi.runtime.set_all_config({})


@pytest.mark.parametrize("example", sorted(KINDS))
def test_example_registers_its_custom_resource(example: str) -> None:
    directory = EXAMPLES / example
    assert (directory / "Pulumi.yaml").is_file()
    readme = (directory / "README.md").read_text().strip()
    assert readme and "\n" not in readme

    result = run_example(example)
    kind = KINDS[example]
    cr = result.one(f"kubernetes:ray.io/v1:{kind}")
    assert cr.parent == result.one(f"ray:index:{kind}").urn


def test_the_gcs_ft_password_is_only_ever_a_secret() -> None:
    password = SECRETS["gcs-ft-redis"]["redisPassword"]
    result = run_example("gcs-ft-redis")
    secret = result.one("kubernetes:core/v1:Secret")
    assert list(secret_paths(secret.raw)) == ["stringData"]
    assert secret.inputs["stringData"] == {"password": password}
    cluster = result.one("kubernetes:ray.io/v1:RayCluster").inputs
    assert password not in repr(cluster)
    password = cluster["spec"]["gcsFaultToleranceOptions"]["redisPassword"]
    assert password["valueFrom"]["secretKeyRef"]["key"] == "password"


def test_the_gcs_ft_example_has_no_default_password() -> None:
    """A fallback password is one every reader of the example knows: without the secret
    config the program stops, naming the key to set."""
    with pytest.raises(pulumi.ConfigMissingError) as missing:
        run_example("gcs-ft-redis", secrets={})
    assert "redisPassword" in str(missing.value)


def test_no_example_falls_back_to_a_literal_secret() -> None:
    for program in EXAMPLES.glob("*/__main__.py"):
        text = program.read_text()
        assert "get_secret(" not in text, program  # require_secret: no `or "default"`
        assert 'Output.secret("' not in text, program


def test_the_readme_opens_with_the_quickstart_example() -> None:
    """The README's ten lines are the example the tests run, not a copy that drifts."""
    readme = (EXAMPLES.parent / "README.md").read_text()
    block = readme.split("```python\n", 1)[1].split("```", 1)[0]
    program = (EXAMPLES / "quickstart" / "__main__.py").read_text()
    assert block == program
    assert len([line for line in program.splitlines() if line.strip()]) <= 12
