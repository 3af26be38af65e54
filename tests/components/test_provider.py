"""The component provider serves the committed schema, started either way it can be:
``python -m pulumi_ray.provider`` (what the executable ``pulumi-resource-ray`` runs) and
``python components/provider`` (what a current Pulumi CLI's Python host runs for the
plugin directory with ``PulumiPlugin.yaml``, which the host we build cannot: the e2e tier
runs the first way through the engine, this is the only check of the second).

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
