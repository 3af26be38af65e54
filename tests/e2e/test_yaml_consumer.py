"""The components as a Pulumi package, consumed by a Pulumi YAML program through the real
engine on the local control plane (issue 28).

The YAML program's ``ray:index:RayOperator`` and ``ray:index:RayCluster`` are constructed
by our component provider (``components/provider``), run as the executable plugin
``pulumi-resource-ray`` (hack/pulumi/componentplugin.py): the Python host we can build
cannot run the plugin directory. The checks: the schema the engine gets from the plugin
is the committed one; and the YAML quickstart ups (the RayCluster ``ready``, reconciled
by the operator the stack deployed, run under its ServiceAccount) and destroys to
nothing. Its preview registers what the Python quickstart's does: test_consumers.py,
with the TypeScript and Go quickstarts.
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from components.schema import COMPONENTS, PACKAGE_NAME, SCHEMA_FILE
from hack.localcluster.deployed_operator import NEVER_PULLED_IMAGE
from hack.pulumi.componentplugin import write_provider_plugin
from tests.e2e.conftest import PulumiEngine
from tests.e2e.stacks import ProgramStack
from tests.examples import EXAMPLES

pytestmark = pytest.mark.timeout(1200)

YAML_QUICKSTART = EXAMPLES / "yaml-quickstart"


def _pulumi(engine: PulumiEngine, cwd: Path, *args: str) -> str:
    """Run the built CLI and return its stdout; a failure raises with the engine's words."""
    result = subprocess.run(
        [str(engine.engine.path("pulumi")), *args, "--non-interactive"],
        cwd=cwd,
        env=engine.env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if result.returncode != 0:
        raise AssertionError(
            f"pulumi {' '.join(args)} exited {result.returncode}\n"
            f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
        )
    return result.stdout


def test_the_engine_gets_the_committed_schema_from_the_plugin(
    pulumi_engine: PulumiEngine, tmp_path: Path
) -> None:
    """``pulumi package get-schema`` of the executable plugin answers what it answers for
    the committed ``schema.json``: the CLI reads both into its own schema types, which
    drop what the schema language has no place for (a description on a map's values,
    empty lists), so both sides go through the same reading."""
    plugin = write_provider_plugin(tmp_path / "bin")
    served = _pulumi(pulumi_engine, tmp_path, "package", "get-schema", str(plugin))
    committed = _pulumi(pulumi_engine, tmp_path, "package", "get-schema", str(SCHEMA_FILE))
    assert json.loads(served) == json.loads(committed)
    tokens = {f"{PACKAGE_NAME}:index:{c.__name__}" for c in COMPONENTS}
    assert set(json.loads(served)["resources"]) == tokens


def _unique_names(program: ProgramStack, operator: str) -> None:
    """Give the copied YAML quickstart names of its own, so its operator's cluster-wide
    objects and its RayCluster meet nothing another test made: the operator and its
    namespace are ``operator``, the RayCluster is the stack's ``ray_cluster_name`` (in
    ``default``, as in the quickstart)."""
    project_file = Path(program.stack.workspace.work_dir) / "Pulumi.yaml"
    project = yaml.safe_load(project_file.read_text())
    resources = project["resources"]
    resources["ray-operator"]["properties"].update({"name": operator, "namespace": operator})
    resources["demo"]["properties"]["name"] = program.ray_cluster_name
    project_file.write_text(yaml.safe_dump(project, sort_keys=False))


def test_the_yaml_quickstart_ups_and_destroys(
    program_stack: Callable[..., ProgramStack], tmp_path: Path
) -> None:
    program = program_stack(example=YAML_QUICKSTART)
    operator = f"ray-op-{uuid.uuid4().hex[:6]}"
    _unique_names(program, operator)
    program.set_config("operatorImage", NEVER_PULLED_IMAGE)
    cluster = program.cluster

    # (Its preview is test_consumers.py's: the program as committed.)
    program.run_operator(namespace=operator, name=operator, work_dir=tmp_path)
    started = time.monotonic()
    result = program.up()
    up_seconds = time.monotonic() - started
    # Read at once: the component's up must not return before the operator said ready.
    live = cluster.get_json("raycluster", "-n", "default", program.ray_cluster_name)
    assert live["status"]["state"] == "ready", live.get("status")
    assert result.outputs["dashboard"].value == (
        f"http://{program.ray_cluster_name}-head-svc.default.svc.cluster.local:8265"
    )
    running = program.operator
    assert running is not None and running.error is None, running and running.error
    assert running.running(), running.log_text()[-4000:]
    assert running.forbidden_requests() == [], running.forbidden_requests()[:5]
    print(f"YAML quickstart: up {up_seconds:.1f} s")

    owned = [
        ("raycluster", program.ray_cluster_name, "default"),
        ("namespace", operator, None),
        ("clusterrole", operator, None),
        ("clusterrolebinding", operator, None),
    ]
    started = time.monotonic()
    program.destroy()
    print(f"YAML quickstart: destroy {time.monotonic() - started:.1f} s")
    for kind, name, namespace in owned:
        where = ("-n", namespace) if namespace else ()
        found = cluster.kubectl("get", kind, name, *where, "-o", "name", check=False)
        assert "NotFound" in found.stderr, f"{kind}/{name} left behind: {found.stdout}"
    resources = program.stack.export_stack().deployment.get("resources") or []
    assert resources == [], [r["urn"] for r in resources]
