"""The component provider serves the committed schema, started either way it can be:
``python -m pulumi_ray.provider`` (what an installed package's executable plugin runs)
and ``python components/provider`` (what a current Pulumi CLI's Python host runs for the
plugin directory with ``PulumiPlugin.yaml``, and what the tests' ``pulumi-resource-ray``
runs through the engine, since the host we build cannot run the directory itself).

Each asks the provider's own gRPC ``GetSchema``, the exact text it serves, before any
engine reads it into its schema types (tests/e2e/test_yaml_consumer.py compares that).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from pulumi.runtime.proto import provider_pb2, provider_pb2_grpc

from components.schema import SCHEMA_FILE

REPO = Path(__file__).resolve().parents[2]
LAUNCHES = {
    "module": ["-m", "pulumi_ray.provider"],
    "plugin-directory": [str(REPO / "components" / "provider")],
}


@pytest.fixture(params=sorted(LAUNCHES))
def provider_port(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[int]:
    """The port of a provider started as ``request.param`` says, from a directory that is
    not the repository (the engine starts plugins in the program's directory)."""
    # The engine's address: nothing listens there, and GetSchema does not call it.
    command = [sys.executable, *LAUNCHES[request.param], "127.0.0.1:1"]
    with subprocess.Popen(
        command,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        try:
            assert process.stdout is not None and process.stderr is not None
            port = process.stdout.readline().strip()
            if not port.isdigit():
                process.kill()
                raise AssertionError(f"{command} printed no port: {process.stderr.read()}")
            yield int(port)
        finally:
            process.terminate()
            process.wait(timeout=30)


def test_the_provider_serves_the_committed_schema(provider_port: int) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{provider_port}") as channel:
        stub = provider_pb2_grpc.ResourceProviderStub(channel)
        response = stub.GetSchema(provider_pb2.GetSchemaRequest(), timeout=60)
    assert json.loads(response.schema) == json.loads(SCHEMA_FILE.read_text())


def test_an_input_error_reaches_the_engine_as_a_check_failure_with_its_own_line() -> None:
    """The provider's server passes a ``RunError`` through as an unhandled exception (the
    engine then prints ``Unexpected <class ...RayInputError>``); translated, it is an
    ``InputPropertiesError`` whose message is the one line, and anything else passes."""
    import pulumi
    from pulumi.provider.server import ComponentInitError

    from components._inputs import RayInputError
    from components.provider.checked import engine_error

    error = RayInputError(
        "RayCluster team-y/shared",
        "spec.workerGroupSpecs[0].maxReplicas",
        "worker group cpu has maxReplicas -1",
        "set maxReplicas >= 0",
        "RAYCLUSTER_NEGATIVE_REPLICAS",
    )
    line = (
        "RayCluster team-y/shared: spec.workerGroupSpecs[0].maxReplicas: worker group cpu "
        "has maxReplicas -1; set maxReplicas >= 0 [RAYCLUSTER_NEGATIVE_REPLICAS]"
    )
    for raised in (error, ComponentInitError(error)):
        translated = engine_error(raised)
        assert isinstance(translated, pulumi.InputPropertiesError)
        assert not isinstance(translated, pulumi.RunError)
        assert translated.message == line
        assert translated.errors == []
    other = ValueError("a bug")
    assert engine_error(other) is other
    wrapped = ComponentInitError(other)
    assert engine_error(wrapped) is wrapped


OUTPUT_ERROR_SCRIPT = """
import asyncio

import pulumi

from components._inputs import RayInputError
from components.provider.checked import _checked


async def run() -> None:
    async def fail() -> str:
        raise RayInputError("RayJob j", "spec.entrypoint", "is empty", "set it", "CODE")

    checked = _checked(pulumi.Output.from_input(asyncio.ensure_future(fail())))
    for part in (checked.future, checked.is_known):
        try:
            await part()
        except pulumi.InputPropertiesError as error:
            assert error.message.startswith("RayJob j: spec.entrypoint"), error.message
        else:
            raise AssertionError("no error")
    known = _checked(pulumi.Output.secret("value"))
    assert await known.future() == "value"
    assert await known.is_secret()
    assert _checked("plain") == "plain"
    print("translated")


asyncio.run(run())
"""


def test_an_input_error_in_an_output_is_translated_where_the_server_awaits_it() -> None:
    """A consumer's inputs are Outputs, so the spec is checked in an ``apply``: the error
    surfaces when the server awaits the component's outputs. In a process of its own: a
    failed Output stays in the SDK's process-wide tracking, which the next program run
    in this process would report."""
    result = subprocess.run(
        [sys.executable, "-W", "error", "-c", OUTPUT_ERROR_SCRIPT],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (result.returncode, result.stdout) == (0, "translated\n"), result.stderr
