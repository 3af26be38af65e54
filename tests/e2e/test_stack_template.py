"""The repository's stack template (Pulumi.yaml + __main__.py) through the real engine:
it previews our CRDs and the workloads its config names, and a bad manifest fails the
preview with the object and the field path before anything reaches the cluster."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pulumi.automation as auto
import pytest
import yaml

from tests.e2e.stacks import ProgramStack

pytestmark = pytest.mark.timeout(2400)

REPO_ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = REPO_ROOT / "examples" / "manifests"


def test_template_previews_the_crds_and_the_configured_workloads(
    program_stack: Callable[..., ProgramStack],
) -> None:
    program = program_stack(
        template_manifests=[str(MANIFESTS / "raycluster-gpu.yaml"), str(MANIFESTS / "rayjob.yaml")]
    )
    _, steps = program.preview()
    creates = sorted(step.type for step in steps if step.op == auto.OpType.CREATE)
    assert creates.count("kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition") == 4
    assert "kubernetes:ray.io/v1:RayCluster" in creates
    assert "kubernetes:ray.io/v1:RayJob" in creates
    names = {step.urn.rsplit("::", 1)[1] for step in steps}
    assert f"raycluster-{program.namespace}-raycluster-gpu" in names


def test_template_refuses_an_invalid_manifest_with_its_field_path(
    program_stack: Callable[..., ProgramStack], tmp_path: Path
) -> None:
    manifest = yaml.safe_load((MANIFESTS / "raycluster-minimal.yaml").read_text())
    manifest["spec"]["workerGroupSpecs"][0]["minReplicas"] = 5
    manifest["spec"]["workerGroupSpecs"][0]["maxReplicas"] = 2
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(manifest))
    program = program_stack(template_manifests=[str(bad)])
    with pytest.raises(auto.CommandError) as failed:
        program.preview()
    message = str(failed.value) + program.text
    assert "spec.workerGroupSpecs[0].minReplicas" in message
    assert "RayCluster" in message and "raycluster-minimal" in message
    assert "Traceback" not in message


CORPUS = REPO_ROOT / "tests" / "unit" / "api" / "corpus"


def _expected(case: Path) -> list[str]:
    return [
        line.removeprefix("# expect: ")
        for line in case.read_text().splitlines()
        if line.startswith("# expect: ")
    ]


def test_template_reports_corpus_manifests_as_render_does(
    program_stack: Callable[..., ProgramStack],
) -> None:
    """A few cases of the unit corpus (tests/unit/api/corpus), each given to the template
    as a manifest: the preview fails with every line the validator reports for it, in the
    same format, plus where it is set; a YAML error names the file, line and column."""
    program = program_stack(template_config={"operator": {"featureGates": "RayCronJob=true"}})
    cases = ["several-mistakes.yaml", "raycronjob-job-template-typo.yaml", "yaml-syntax-error.yaml"]
    for name in cases:
        case = CORPUS / name
        program.write_config({"manifests": [str(case)]})
        with pytest.raises(auto.CommandError) as failed:
            program.preview()
        message = str(failed.value) + program.text
        for line in _expected(case):
            shown = line.replace(f"{name}:", f"{case}:", 1)
            assert shown in message, (name, shown, message[-3000:])
        assert "Traceback" not in message and "errors.pydantic.dev" not in message
