"""The language hosts we build beyond Python, through the real engine.

Issue 28 makes the components a Pulumi package that YAML, TypeScript and Go programs
consume. Before any of that can be tested the engine must (a) run a YAML program through
the pulumi-yaml host against the local control plane and (b) start the Node.js and Go
hosts at all. These tests pin those capabilities with the smallest program each, so a
later failure points at the engine, not at our components. (A Python component provider
cannot run yet: the only Python host buildable here, sdk/v3 v3.79.0, predates plugin
hosting; hack/pulumi/versions.py says why.)
"""

from __future__ import annotations

import json
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from hack.gobuild import LESS_GC_ENV
from hack.localcluster import LocalCluster
from tests.e2e.conftest import PulumiEngine

# The first test's setup may build the engine unless `python -m hack.pulumi build` ran
# before pytest (see test_pulumi_engine.py); the default 600 s would cut it.
pytestmark = pytest.mark.timeout(2400)

CONFIG_MAP = "kubernetes:core/v1:ConfigMap"


def test_yaml_program_previews_a_config_map(
    pulumi_engine: PulumiEngine, local_cluster: LocalCluster, tmp_path: Path
) -> None:
    """A one-resource YAML program previews through pulumi-language-yaml and our provider."""
    (tmp_path / "Pulumi.yaml").write_text(
        textwrap.dedent(
            """\
            name: yaml-host-spike
            runtime: yaml
            resources:
              greeting:
                type: kubernetes:core/v1:ConfigMap
                properties:
                  metadata:
                    namespace: default
                  data:
                    greeting: hello from yaml
            """
        )
    )
    started = time.monotonic()
    pulumi_engine.cli(tmp_path, "stack", "init", "spike")
    pulumi_engine.cli(
        tmp_path,
        "config",
        "set",
        "kubernetes:kubeconfig",
        str(local_cluster.kubeconfig),
    )
    preview = json.loads(pulumi_engine.cli(tmp_path, "preview", "--json").stdout)
    elapsed = time.monotonic() - started
    steps = {(step["newState"]["type"], step["op"]) for step in preview["steps"]}
    assert (CONFIG_MAP, "create") in steps, preview["steps"]
    data = next(
        step["newState"]["inputs"]["data"]
        for step in preview["steps"]
        if step["newState"]["type"] == CONFIG_MAP
    )
    assert data == {"greeting": "hello from yaml"}
    print(f"yaml host: stack init + config + preview in {elapsed:.1f} s")


@pytest.mark.parametrize("host", ["pulumi-language-nodejs", "pulumi-language-go"])
def test_host_starts_and_serves(pulumi_engine: PulumiEngine, host: str) -> None:
    """A language host, started as the engine starts it, prints the port it serves on.

    Hosts take the engine's address as their argument and answer on a port they print;
    the engine is not there, so the host serves until it is stopped.
    """
    with subprocess.Popen(
        [str(pulumi_engine.engine.path(host)), "127.0.0.1:1"],
        env=pulumi_engine.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as process:
        try:
            assert process.stdout is not None
            port = process.stdout.readline().strip()
            assert port.isdigit() and int(port) > 0, (port, process.poll())
        finally:
            process.terminate()
            process.wait(timeout=30)


def test_the_engine_and_its_plugins_run_with_less_gc(pulumi_engine: PulumiEngine) -> None:
    """The e2e tier trades the Go programs' garbage collection for memory
    (``gobuild.LESS_GC_ENV``); everything the engine starts inherits its environment."""
    assert {key: pulumi_engine.env.get(key) for key in LESS_GC_ENV} == dict(LESS_GC_ENV)
