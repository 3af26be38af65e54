"""``python -m pulumi_ray review`` on what the real engine's ``pulumi preview --json`` says
of a change to an example deployed with ``pulumi up`` on the local control plane.

Three changes a pull request makes: the quickstart's worker replicas 2 -> 3, a new Ray
image in rayservice-gateway's cluster (an incremental upgrade), batch-rayjob's entrypoint
(config, so a new RayJob name: the engine's replacement). The review reads only the
engine's states, so the workloads are deployed without waiting for an operator
(``wait_for_ready=False`` in the copy); what the operator then does with each verdict is
``tests/integration/test_review_predictions.py``'s.
"""

from __future__ import annotations

import io
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from components.__main__ import main
from hack.localcluster.deployed_operator import NEVER_PULLED_IMAGE
from tests.e2e.conftest import PulumiEngine
from tests.e2e.stacks import ProgramStack
from tests.examples import EXAMPLES

pytestmark = pytest.mark.timeout(900)


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, (old, path)
    path.write_text(text.replace(old, new))


def no_wait(work_dir: Path, anchor: str) -> None:
    edit(work_dir / "__main__.py", anchor, f"wait_for_ready=False, {anchor}")


@dataclass(frozen=True)
class Change:
    before: Callable[[ProgramStack, Path], None]
    """The program as deployed: names of its own, no wait for an operator."""
    after: Callable[[ProgramStack, Path], None]
    """The pull request's change."""
    said: tuple[str, ...]
    """What the text report must say."""


def quickstart(program: ProgramStack, work_dir: Path) -> None:
    operator = f"ray-op-{uuid.uuid4().hex[:6]}"
    program.set_config("operatorImage", NEVER_PULLED_IMAGE)
    edit(work_dir / "__main__.py", "RayOperatorArgs(", f'RayOperatorArgs(name="{operator}", '
         f'namespace="{operator}", ')  # fmt: skip
    no_wait(work_dir, 'namespace="default", ray_version')
    edit(
        work_dir / "__main__.py", '"demo", opts', f'"demo", name="{program.ray_cluster_name}", opts'
    )


def rayservice(program: ProgramStack, work_dir: Path) -> None:
    no_wait(work_dir, 'namespace=config.get("namespace")')
    named = f'"fruit", name="fruit-{uuid.uuid4().hex[:6]}",'
    edit(work_dir / "__main__.py", '"fruit",', named)


def rayjob(program: ProgramStack, work_dir: Path) -> None:
    no_wait(work_dir, 'namespace=config.get("namespace")')


CHANGES = {
    "quickstart": Change(
        quickstart,
        lambda program, work_dir: edit(work_dir / "__main__.py", '"replicas": 2', '"replicas": 3'),
        ("(update): 1 pod(s) created",),
    ),
    "rayservice-gateway": Change(
        rayservice,
        lambda program, work_dir: edit(
            work_dir / "__main__.py", '"rayproject/ray:2.52.0"', '"rayproject/ray:2.53.0"'
        ),
        ("incremental upgrade: a new cluster of 2 pod(s)", "WARN upgrade-starts-new-cluster"),
    ),
    "batch-rayjob": Change(
        rayjob,
        lambda program, work_dir: program.set_config("entrypoint", "python -c 'print(1)'"),
        (
            "(replace): a new run on a new cluster of 2 pod(s) and a submitter pod",
            "WARN job-runs-again",
        ),
    ),
}


def review(preview: Path, fmt: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["review", str(preview), "--format", fmt], stdout=out, stderr=err)
    assert code != 2, err.getvalue()
    return code, out.getvalue()


def ray_steps(preview: str) -> str:
    """The preview's ray.io steps only (the CRDs' are most of its bytes), without the
    stack's config (a kubeconfig path): what tests/components/review_golden/ keeps of the
    quickstart's and batch-rayjob's, which the components tier reads."""
    digest = json.loads(preview)
    digest["config"] = {}
    digest["steps"] = [s for s in digest["steps"] if "kubernetes:ray.io/v1:" in s.get("urn", "")]
    return json.dumps(digest, indent=1, sort_keys=True) + "\n"


@pytest.mark.parametrize("example", CHANGES)
def test_the_review_of_a_real_preview(
    example: str,
    program_stack: Callable[..., ProgramStack],
    pulumi_engine: PulumiEngine,
    tmp_path: Path,
) -> None:
    change = CHANGES[example]
    program = program_stack(example=EXAMPLES / example)
    work_dir = Path(program.stack.workspace.work_dir)
    change.before(program, work_dir)
    up = program.up()
    assert up.summary.result == "succeeded", program.text[-4000:]
    change.after(program, work_dir)
    preview = pulumi_engine.cli(work_dir, "preview", "--json", "--stack", program.stack.name)
    path = tmp_path / "preview.json"
    path.write_text(preview.stdout)
    code, text = review(path, "text")
    _, markdown = review(path, "markdown")
    print(f"\n{example}: preview {len(preview.stdout)} characters\n{markdown}")
    for said in change.said:
        assert said in text, text
    assert code == 0, text
    (tmp_path / "ray-steps.json").write_text(ray_steps(preview.stdout))
