"""The components as a Pulumi package, consumed by a Pulumi YAML program through the real
engine on the local control plane (issue 28).

The YAML program's ``ray:index:RayOperator`` and ``ray:index:RayCluster`` are constructed
by our component provider (``components/provider``), run as the executable plugin
``pulumi-resource-ray`` (hack/pulumi/componentplugin.py): the Python host we can build
cannot run the plugin directory. The check here: the schema the engine gets from the
plugin is the committed one. The YAML quickstart's preview, up and destroy are
test_consumers.py's, with the TypeScript and Go quickstarts.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

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


def test_the_engine_gets_the_committed_schema_from_the_plugin(
    pulumi_engine: PulumiEngine, tmp_path: Path
) -> None:
    """``pulumi package get-schema`` of the executable plugin answers what it answers for
    the committed ``schema.json``: the CLI reads both into its own schema types, which
    drop what the schema language has no place for (a description on a map's values,
    empty lists), so both sides go through the same reading."""
    plugin = write_provider_plugin(tmp_path / "bin")
    served = pulumi_engine.cli(tmp_path, "package", "get-schema", str(plugin), timeout=300).stdout
    committed = pulumi_engine.cli(
        tmp_path, "package", "get-schema", str(SCHEMA_FILE), timeout=300
    ).stdout
    assert json.loads(served) == json.loads(committed)
    tokens = {f"{PACKAGE_NAME}:index:{c.__name__}" for c in COMPONENTS}
    assert set(json.loads(served)["resources"]) == tokens


SUSPENDED_JOB: dict[str, Any] = {
    "type": "ray:index:RayJob",
    "properties": {
        "namespace": "default",
        # Suspended: the operator reports ``jobDeploymentStatus: Suspended`` without a
        # cluster, and ``up`` waits for exactly that; a running job would need Ray.
        "suspend": True,
        "spec": {
            "entrypoint": "python -c 'print(1)'",
            "shutdownAfterJobFinishes": True,
            "rayClusterSpec": {
                "rayVersion": "2.52.1",
                "headGroupSpec": {
                    "template": {
                        "spec": {"containers": [{"name": "ray", "image": "rayproject/ray:2.52.1"}]}
                    }
                },
            },
        },
    },
    "options": {"dependsOn": ["${ray-operator}"]},
}


def test_typed_status_fields_are_outputs_of_a_yaml_program(
    program_stack: Callable[..., ProgramStack], tmp_path: Path
) -> None:
    """``${demo.status.state}`` and ``${job.status.jobDeploymentStatus}``: property access
    on a component's status, refused while it was ``Any``, reads the typed object after
    ``up`` (the RayCluster ready, the suspended RayJob Suspended, as the operator
    reported them and each component waited for)."""
    program = program_stack(example=YAML_QUICKSTART)
    work_dir = Path(program.stack.workspace.work_dir)
    operator = f"ray-op-{uuid.uuid4().hex[:6]}"
    job_name = f"job-{uuid.uuid4().hex[:6]}"
    project_file = work_dir / "Pulumi.yaml"
    project = yaml.safe_load(project_file.read_text())
    resources = project["resources"]
    resources["ray-operator"]["properties"].update({"name": operator, "namespace": operator})
    resources["demo"]["properties"]["name"] = program.ray_cluster_name
    job = json.loads(json.dumps(SUSPENDED_JOB))
    job["properties"]["name"] = job_name
    resources["job"] = job
    assert project["outputs"]["state"] == "${demo.status.state}"  # as the example has it
    project["outputs"]["jobDeploymentStatus"] = "${job.status.jobDeploymentStatus}"
    project["outputs"]["jobName"] = "${job.name}"
    project_file.write_text(yaml.safe_dump(project, sort_keys=False))
    program.set_config("operatorImage", NEVER_PULLED_IMAGE)

    program.run_operator(namespace=operator, name=operator, work_dir=tmp_path)
    started = time.monotonic()
    result = program.up()
    print(f"up of the quickstart and a suspended RayJob: {time.monotonic() - started:.1f} s")
    assert result.outputs["state"].value == "ready", program.text[-4000:]
    assert result.outputs["jobDeploymentStatus"].value == "Suspended", program.text[-4000:]
    live = program.cluster.get_json("rayjob", "-n", "default", result.outputs["jobName"].value)
    assert live["status"]["jobDeploymentStatus"] == "Suspended", live.get("status")
    program.destroy()
