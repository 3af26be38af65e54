"""Every example under ``examples/`` previews cleanly through the real engine against the
local control plane, with its default config: what the README promises a user who runs
``pulumi preview`` in it."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pulumi.automation as auto
import pytest

from hack.localcluster import LocalCluster
from tests.e2e.conftest import PulumiEngine
from tests.e2e.stacks import crd_files, program_copy
from tests.examples import COMPONENT, CONFIG, EXAMPLES, SDK_EXAMPLES, SECRETS, YAML_EXAMPLES

pytestmark = pytest.mark.timeout(900)

EXAMPLE_DIRS = sorted(
    p.parent
    for p in EXAMPLES.glob("*/Pulumi.yaml")
    if p.parent.name not in YAML_EXAMPLES and p.parent.name not in SDK_EXAMPLES
)
"""The Python examples; test_yaml_consumer.py previews (and runs) the YAML ones,
test_sdk_*.py build the TypeScript and Go ones."""


@pytest.fixture(scope="module")
def ray_crds(local_cluster: LocalCluster) -> Iterator[None]:
    """Our CRDs in the cluster, as a user previewing an example has them (the provider
    dry-runs each custom resource against the API server)."""
    local_cluster.apply_crds(*crd_files())
    yield


def test_every_example_is_listed() -> None:
    every = sorted(p.parent.name for p in EXAMPLES.glob("*/Pulumi.yaml"))
    assert every == sorted([*COMPONENT, *YAML_EXAMPLES, *SDK_EXAMPLES])


@pytest.mark.parametrize("example", EXAMPLE_DIRS, ids=lambda p: p.name)
def test_example_previews_cleanly(
    example: Path,
    pulumi_engine: PulumiEngine,
    local_cluster: LocalCluster,
    ray_crds: None,
    tmp_path: Path,
) -> None:
    work_dir = program_copy(tmp_path, source=example)
    workspace = auto.LocalWorkspace(
        work_dir=str(work_dir),
        pulumi_home=pulumi_engine.env["PULUMI_HOME"],
        env_vars={**pulumi_engine.env, "KUBECONFIG": str(local_cluster.kubeconfig)},
        pulumi_command=pulumi_engine.command,
    )
    stack = auto.Stack.create(f"example-{uuid.uuid4().hex[:8]}", workspace)
    for key, value in SECRETS.get(example.name, {}).items():
        # What the example's README asks for; it has no default (config.require_secret).
        stack.set_config(key, auto.ConfigValue(value=value, secret=True))
    for key, value in CONFIG.get(example.name, {}).items():
        stack.set_config(key, auto.ConfigValue(value=value))
    output: list[str] = []
    steps: list[auto.StepEventMetadata] = []

    def collect(event: auto.EngineEvent) -> None:
        if event.resource_pre_event is not None:
            steps.append(event.resource_pre_event.metadata)

    try:
        stack.preview(diff=True, color="never", on_output=output.append, on_event=collect)
    except auto.CommandError as error:
        raise AssertionError(
            f"{example.name}: preview failed\n{''.join(output)[-4000:]}"
        ) from error
    finally:
        workspace.remove_stack(stack.name)
    text = "".join(output)
    assert "warning:" not in text.lower(), text[-4000:]
    creates = {step.type for step in steps if step.op == auto.OpType.CREATE}
    assert f"ray:index:{COMPONENT[example.name]}" in creates, sorted(creates)


def _readme_preview() -> list[str]:
    """The README's block of the quickstart's ``pulumi preview`` output."""
    readme = (EXAMPLES.parent / "README.md").read_text()
    [block] = [
        block
        for block in re.findall(r"^```text\n(.*?)^```$", readme, flags=re.M | re.S)
        if block.startswith("Previewing update (dev):\n")
    ]
    return block.splitlines()


def test_the_quickstart_previews_as_the_readme_shows(
    pulumi_engine: PulumiEngine, local_cluster: LocalCluster, ray_crds: None, tmp_path: Path
) -> None:
    """The README's preview of the quickstart, line for line but the progress lines it
    says it leaves out (a stack named ``dev`` there; a name of its own here)."""
    work_dir = program_copy(tmp_path, source=EXAMPLES / "quickstart")
    workspace = auto.LocalWorkspace(
        work_dir=str(work_dir),
        pulumi_home=pulumi_engine.env["PULUMI_HOME"],
        env_vars={**pulumi_engine.env, "KUBECONFIG": str(local_cluster.kubeconfig)},
        pulumi_command=pulumi_engine.command,
    )
    name = f"readme-{uuid.uuid4().hex[:8]}"
    stack = auto.Stack.create(name, workspace)
    for key, value in CONFIG["quickstart"].items():
        stack.set_config(key, auto.ConfigValue(value=value))
    output: list[str] = []
    try:
        stack.preview(color="never", on_output=output.append)
    finally:
        workspace.remove_stack(stack.name)
    printed = [line.rstrip() for line in "\n".join(output).replace(name, "dev").splitlines()]
    shown = _readme_preview()
    said = "\n".join(printed)
    # The header; each resource's step, once (the engine prints progress lines again, and
    # in the order registrations finish, which differs from run to run); the summary.
    assert printed[0] == shown[0], said
    # A step's progress line may carry the diagnostics so far (the kubernetes provider's
    # warning that this engine takes it from PATH): the step itself is what the README shows.
    steps = {
        re.sub(r"^( \+  \S+ \S+ create)\b.*", r"\1", line)
        for line in printed
        if line.startswith(" +  ")
    }
    assert steps == {line for line in shown if line.startswith(" +  ")}, said
    summary = shown[shown.index("Outputs:") :]
    assert printed[printed.index("Outputs:") :][: len(summary)] == summary, said
