"""The language hosts we build beyond Python, and a Python component provider, through the
real engine.

Issue 28 makes the components a Pulumi package that YAML, TypeScript and Go programs
consume. Before any of that can be tested the engine must (a) run a YAML program through
the pulumi-yaml host against the local control plane, (b) answer ``pulumi package
get-schema`` for a Python component provider directory (``PulumiPlugin.yaml`` with
``runtime: python``), which the engine runs through the Python host's RunPlugin, and
(c) start the Node.js and Go hosts at all. These tests pin those capabilities with the
smallest program each, so a later failure points at the engine, not at our components.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from hack.localcluster import LocalCluster
from tests.e2e.conftest import PulumiEngine

# The first test's setup may build the engine unless `python -m hack.pulumi build` ran
# before pytest (see test_pulumi_engine.py); the default 600 s would cut it.
pytestmark = pytest.mark.timeout(2400)

CONFIG_MAP = "kubernetes:core/v1:ConfigMap"


def _pulumi(
    engine: PulumiEngine, cwd: Path, *args: str, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """Run the built CLI; a failure raises with its whole output, the engine's own words."""
    result = subprocess.run(
        [str(engine.engine.path("pulumi")), *args, "--non-interactive"],
        cwd=cwd,
        env=engine.env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if result.returncode != 0:
        raise AssertionError(
            f"pulumi {' '.join(args)} exited {result.returncode}\n"
            f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
        )
    return result


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
    _pulumi(pulumi_engine, tmp_path, "stack", "init", "spike")
    _pulumi(
        pulumi_engine,
        tmp_path,
        "config",
        "set",
        "kubernetes:kubeconfig",
        str(local_cluster.kubeconfig),
    )
    preview = json.loads(_pulumi(pulumi_engine, tmp_path, "preview", "--json").stdout)
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


PLUGIN_MAIN = """\
import pulumi
from pulumi.provider.experimental import component_provider_host
from typing import TypedDict


class GreetingArgs(TypedDict):
    message: pulumi.Input[str]
    \"\"\"What the greeting says.\"\"\"


class Greeting(pulumi.ComponentResource):
    \"\"\"A component with one typed input and one output: the least a schema can name.\"\"\"

    text: pulumi.Output[str]

    def __init__(
        self, name: str, args: GreetingArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("spike:index:Greeting", name, {}, opts)
        self.text = pulumi.Output.from_input(args["message"])
        self.register_outputs({"text": self.text})


if __name__ == "__main__":
    component_provider_host(name="spike", components=[Greeting])
"""


@pytest.mark.xfail(
    strict=True,
    reason=(
        "the Python host we can build (sdk/v3 v3.79.0) cannot run a Python plugin for this "
        "engine: the engine first asks it to install the plugin's dependencies, and it makes "
        "a virtualenv in the plugin directory and runs pip, which needs the network; its "
        "RunPlugin then runs `python <RunPluginRequest.program>`, a field the engine no "
        "longer sets. The host's own module, which has both fixed, answers 403 at the Go "
        "module proxy here (hack/pulumi/versions.py). Strict: a host that works fails this "
        "marker, and the marker goes."
    ),
)
def test_python_component_provider_answers_get_schema(
    pulumi_engine: PulumiEngine, tmp_path: Path
) -> None:
    """``pulumi package get-schema`` runs a ``runtime: python`` plugin through the Python
    host and returns the schema the SDK infers from the component's annotations."""
    plugin = tmp_path / "spike"
    plugin.mkdir()
    (plugin / "PulumiPlugin.yaml").write_text("runtime: python\n")
    (plugin / "__main__.py").write_text(PLUGIN_MAIN)
    # Run from elsewhere: the plugin must be found by its path, not by the working directory.
    work = tmp_path / "work"
    work.mkdir()
    started = time.monotonic()
    schema = json.loads(
        _pulumi(pulumi_engine, work, "package", "get-schema", str(plugin), timeout=300).stdout
    )
    elapsed = time.monotonic() - started
    assert schema["name"] == "spike"
    greeting = schema["resources"]["spike:index:Greeting"]
    assert greeting["isComponent"] is True
    assert greeting["inputProperties"]["message"]["type"] == "string"
    assert greeting["properties"]["text"]["type"] == "string"
    print(f"python component provider: get-schema in {elapsed:.1f} s")


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
