"""The corpus of bad manifests (``corpus/*.yaml``): each names, in ``# expect:`` header
lines, every line the validator must report for it, exactly and in order, in the one
error format (``<Kind> <namespace>/<name>: <path>: <what>; <fix> [CODE]``), whatever
caught the mistake: the models, the Kubernetes schema of a pod template, a KubeRay rule
(facts section 7) or the YAML loader. ``# gates:`` sets the operator's feature gates.

The same files go through ``operator_runtime render``'s ``main`` here and through the
stack template in ``tests/e2e/test_stack_template.py``.
"""

from __future__ import annotations

import datetime
import io
import subprocess
from pathlib import Path

import pytest
import yaml

from operator_runtime.api import ErrorCode, FeatureGates, InvalidObjectError, load_object
from operator_runtime.controllers.rendercli import main as render_main
from operator_runtime.render import DocumentError, load_documents

CORPUS = Path(__file__).resolve().parent / "corpus"
REPO = Path(__file__).resolve().parents[3]
CASES = sorted(CORPUS.glob("*.yaml"))


def header(path: Path, key: str) -> list[str]:
    """The values of the ``# <key>: ...`` comment lines at the top of a case."""
    prefix = f"# {key}: "
    return [
        line.removeprefix(prefix)
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.startswith(prefix)
    ]


def reported(path: Path) -> list[str]:
    """Every line the loader and the validator report for one case."""
    gates = FeatureGates.parse(",".join(header(path, "gates")))
    try:
        (document,) = load_documents(path.read_text(encoding="utf-8"), path.name)
    except DocumentError as error:
        return [str(error)]
    assert isinstance(document, dict)
    try:
        load_object(document, gates)
    except InvalidObjectError as error:
        return list(error.lines())
    return []


def test_the_corpus_is_large_and_every_case_expects_something() -> None:
    assert len(CASES) >= 30
    for path in CASES:
        assert header(path, "expect"), f"{path.name} has no # expect: line"


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_a_bad_manifest_reports_exactly_its_expected_lines(path: Path) -> None:
    assert reported(path) == header(path, "expect")


def test_the_corpus_has_a_case_for_every_error_code() -> None:
    """Every rule (facts section 7) and every kind of schema or parse mistake."""
    codes = {line.rsplit("[", 1)[-1].rstrip("]") for p in CASES for line in header(p, "expect")}
    assert codes >= {code.value for code in ErrorCode}


def test_no_message_leaks_pydantic_or_python() -> None:
    for path in CASES:
        for line in header(path, "expect"):
            assert "pydantic" not in line and "Traceback" not in line and "\n" not in line


def render(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m operator_runtime render ARGS``, in this process: a subprocess costs a
    second of start-up a call (tests/components/test_render_cli.py runs the real one)."""
    out, err = io.StringIO(), io.StringIO()
    code = render_main(args, stdout=out, stderr=err)
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def test_render_reports_every_expected_line_and_exits_1() -> None:
    path = CORPUS / "several-mistakes.yaml"
    result = render(str(path))
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.splitlines()[1:] == header(path, "expect")
    assert "Traceback" not in result.stderr


def test_render_names_the_file_line_and_column_of_a_yaml_error() -> None:
    path = CORPUS / "yaml-syntax-error.yaml"
    result = render(str(path))
    (expected,) = header(path, "expect")
    assert result.returncode == 2
    assert result.stderr == f"render: {expected.replace(path.name, str(path), 1)}\n"


def test_render_refuses_a_kind_it_cannot_render(tmp_path: Path) -> None:
    path = tmp_path / "mixed.yaml"
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n")
    result = render(str(path))
    assert result.returncode == 1 and result.stdout == ""
    assert "kind 'ConfigMap' cannot be rendered" in result.stderr


def test_render_prints_the_rayjob_a_raycronjob_creates_next() -> None:
    path = REPO / "examples" / "manifests" / "raycronjob.yaml"
    cron = yaml.safe_load(path.read_text())
    result = render(str(path), "--now", "2026-11-23T18:40:00Z")
    assert result.returncode == 0, result.stderr
    (job,) = yaml.safe_load_all(result.stdout)
    # That schedule is 02:30 in Europe/Berlin (UTC+1 in November): 01:30 UTC tomorrow.
    tick = datetime.datetime(2026, 11, 24, 1, 30, tzinfo=datetime.UTC)
    assert job["kind"] == "RayJob"
    assert job["metadata"]["name"] == f"{cron['metadata']['name']}-{int(tick.timestamp()) // 60}"
    assert job["metadata"]["annotations"] == {
        "ray.io/cronjob-scheduled-timestamp": "2026-11-24T01:30:00Z"
    }
    assert job["spec"] == cron["spec"]["jobTemplate"]


def test_the_example_manifests_pass_untouched_and_with_client_tool_artefacts() -> None:
    """No false alarms: every shipped manifest passes, also with what kubectl and
    client-go write into templates (``creationTimestamp: null``)."""
    gates = FeatureGates.parse("RayCronJob=true")
    manifests = sorted((REPO / "examples" / "manifests").glob("*.yaml"))
    assert manifests
    for path in manifests:
        for document in load_documents(path.read_text(encoding="utf-8"), path.name):
            assert isinstance(document, dict)
            if document.get("kind") in ("RayCluster", "RayJob", "RayService", "RayCronJob"):
                load_object(document, gates)
    cluster = yaml.safe_load(
        (REPO / "examples" / "manifests" / "raycluster-minimal.yaml").read_text()
    )
    cluster["spec"]["headGroupSpec"]["template"]["metadata"] = {"creationTimestamp": None}
    load_object(cluster)
