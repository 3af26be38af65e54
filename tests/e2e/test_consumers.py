"""The quickstart in YAML, TypeScript and Go, through the real engine on the local control
plane, registers what the Python quickstart does (issue 28).

Each program's ``ray:index:*`` components are constructed by our component provider, run
as the executable plugin ``pulumi-resource-ray`` (hack/pulumi/componentplugin.py), named
in the program's ``plugins.providers``; the TypeScript and Go programs go through the
SDKs generated from components/schema.json, run by the Node.js (v3.68) and Go (v3.66)
language hosts. One comparison for every language: the same child resources, with the
same type chains (so the same parents), names and inputs as the Python quickstart's
preview, both as committed and with the same config. The YAML and TypeScript quickstarts
then up (the RayCluster ``ready``, reconciled by the operator the stack deployed, run
under its ServiceAccount) and destroy to nothing; the Go one is previewed only (its
host's build of the program is the slowest preview, and its up would check nothing the
TypeScript one does not).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Final

import pulumi.automation as auto
import pytest
import yaml

from hack.localcluster.deployed_operator import NEVER_PULLED_IMAGE
from tests.e2e.stacks import Plan, ProgramStack, assert_registers_what_python_does, preview_plan
from tests.examples import CONFIG, EXAMPLES, SDK_EXAMPLES, YAML_EXAMPLES

# The first preview of a session pays the Python reference's preview and the SDKs'
# generation too, and the Go host builds the program (seconds warm): all on two shared
# cores.
pytestmark = pytest.mark.timeout(1200)

CONSUMERS = {**YAML_EXAMPLES, **SDK_EXAMPLES}


@pytest.mark.parametrize("example", sorted(CONSUMERS))
def test_the_quickstart_registers_what_the_python_one_does(
    example: str,
    program_stack: Callable[..., ProgramStack],
    python_plan: Callable[[str], tuple[Plan, float]],
) -> None:
    python_example = CONSUMERS[example]
    reference, python_seconds = python_plan(python_example)
    program = program_stack(example=EXAMPLES / example)
    for key, value in CONFIG[example].items():
        program.set_config(key, value)
    plan, seconds = preview_plan(program)
    children = assert_registers_what_python_does(plan, reference)
    print(
        f"preview of {example}: {seconds:.1f} s, of {python_example}: {python_seconds:.1f} s "
        f"({children} child resources each)"
    )


def _yaml_names(work_dir: Path, operator: str, ray_cluster: str) -> None:
    project_file = work_dir / "Pulumi.yaml"
    project = yaml.safe_load(project_file.read_text())
    resources = project["resources"]
    resources["ray-operator"]["properties"].update({"name": operator, "namespace": operator})
    resources["demo"]["properties"]["name"] = ray_cluster
    project_file.write_text(yaml.safe_dump(project, sort_keys=False))


def _typescript_names(work_dir: Path, operator: str, ray_cluster: str) -> None:
    index = work_dir / "index.ts"
    text = index.read_text()
    operator_args = 'new ray.RayOperator("ray-operator", {'
    cluster_namespace = 'namespace: "default",'
    for old, new in (
        (operator_args, f'{operator_args} name: "{operator}", namespace: "{operator}",'),
        (cluster_namespace, f'name: "{ray_cluster}", {cluster_namespace}'),
    ):
        assert text.count(old) == 1, (old, text)
        text = text.replace(old, new)
    index.write_text(text)


RENAME: dict[str, Callable[[Path, str, str], None]] = {
    "yaml-quickstart": _yaml_names,
    "typescript-quickstart": _typescript_names,
}
"""How to give a copy of each quickstart names of its own, so its operator's cluster-wide
objects and its RayCluster meet nothing another test made: the operator and its namespace
are ``operator``, the RayCluster (in ``default``, as in the quickstart) ``ray_cluster``."""


@pytest.mark.parametrize("example", sorted(RENAME))
def test_the_quickstart_ups_and_destroys(
    example: str, program_stack: Callable[..., ProgramStack], tmp_path: Path
) -> None:
    program = program_stack(example=EXAMPLES / example)
    operator = f"ray-op-{uuid.uuid4().hex[:6]}"
    RENAME[example](Path(program.stack.workspace.work_dir), operator, program.ray_cluster_name)
    program.set_config("operatorImage", NEVER_PULLED_IMAGE)
    cluster = program.cluster

    # (Its preview is the comparison's above: the program as committed.)
    program.run_operator(namespace=operator, name=operator, work_dir=tmp_path)
    started = time.monotonic()
    result = program.up()
    up_seconds = time.monotonic() - started
    # Read at once: the component's up must not return before the operator said ready.
    live = cluster.get_json("raycluster", "-n", "default", program.ray_cluster_name)
    assert live["status"]["state"] == "ready", live.get("status")
    # The typed status, read by the program itself (${demo.status.state}, cluster.status.state).
    assert result.outputs["state"].value == "ready", program.text[-4000:]
    assert result.outputs["dashboard"].value == (
        f"http://{program.ray_cluster_name}-head-svc.default.svc.cluster.local:8265"
    )
    running = program.operator
    assert running is not None and running.error is None, running and running.error
    assert running.running(), running.log_text()[-4000:]
    assert running.forbidden_requests() == [], running.forbidden_requests()[:5]
    print(f"{example}: up {up_seconds:.1f} s")

    owned = [
        ("raycluster", program.ray_cluster_name, "default"),
        ("namespace", operator, None),
        ("clusterrole", operator, None),
        ("clusterrolebinding", operator, None),
    ]
    started = time.monotonic()
    program.destroy()
    print(f"{example}: destroy {time.monotonic() - started:.1f} s")
    for kind, name, namespace in owned:
        where = ("-n", namespace) if namespace else ()
        found = cluster.kubectl("get", kind, name, *where, "-o", "name", check=False)
        assert "NotFound" in found.stderr, f"{kind}/{name} left behind: {found.stdout}"
    resources = program.stack.export_stack().deployment.get("resources") or []
    assert resources == [], [r["urn"] for r in resources]


BAD_MIN_REPLICAS: dict[str, tuple[str, str, str]] = {
    "yaml-quickstart": ("Pulumi.yaml", "minReplicas: 0", "minReplicas: 5"),
    "typescript-quickstart": ("index.ts", "minReplicas: 0,", "minReplicas: 5,"),
    "go-quickstart": ("main.go", '"minReplicas": pulumi.Int(0)', '"minReplicas": pulumi.Int(5)'),
}
"""Each quickstart with ``minReplicas`` above its ``maxReplicas`` (4): file, old, new."""
REFUSED: Final = (
    "ray:index:RayCluster resource 'demo' has a problem: RayCluster default/demo: "
    "spec.workerGroupSpecs[0].minReplicas: worker group cpu has minReplicas 5 greater than "
    "maxReplicas 4; set minReplicas <= maxReplicas [RAYCLUSTER_MIN_GT_MAX]"
)
"""The engine's prefix, then the line a Python program prints for the same mistake."""


@pytest.mark.parametrize("example", sorted(BAD_MIN_REPLICAS))
def test_a_bad_value_fails_the_preview_with_one_clean_line(
    example: str, program_stack: Callable[..., ProgramStack]
) -> None:
    """The component provider reports the input error as a check failure: the engine
    prints the object, the field path, the fix and the code on one line, with no
    ``Unexpected <class ...RayInputError>`` (a Python exception passed through gRPC) and
    no traceback, in every language."""
    program = program_stack(example=EXAMPLES / example)
    file_name, old, new = BAD_MIN_REPLICAS[example]
    source = Path(program.stack.workspace.work_dir) / file_name
    text = source.read_text()
    assert text.count(old) == 1, (old, text)
    source.write_text(text.replace(old, new))
    for key, value in CONFIG[example].items():
        program.set_config(key, value)
    with pytest.raises(auto.CommandError) as failed:
        program.preview()
    said = program.text + str(failed.value)
    problems = sorted({line.strip() for line in said.splitlines() if "has a problem" in line})
    assert problems == [f"error: {REFUSED}"], said[-4000:]
    for wrapper in ("Unexpected", "RayInputError", "Traceback", "InputPropertiesError"):
        assert wrapper not in said, said[-4000:]
