"""The review's input layer: ``pulumi preview --json`` and two manifests into before/after
ray.io/v1 objects, secrets and unknown values included, and the CLI around it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.rendering import InputError
from components.review import ReviewSettings, as_json, as_markdown, as_text, from_preview, review
from tests.components.review_previews import (
    SECRET_VALUE,
    UNKNOWN,
    cluster,
    digest,
    quickstart_replicas,
    secret,
    step,
)
from tests.components.review_previews import run_cli as run


def test_a_preview_update_becomes_one_change() -> None:
    [change] = from_preview(quickstart_replicas())
    assert (change.kind, change.namespace, change.name, change.op) == (
        "RayCluster",
        "default",
        "demo",
        "update",
    )
    assert change.changed == ("spec.workerGroupSpecs[cpu].replicas",)
    assert change.engine_changed == ("spec.workerGroupSpecs[0].replicas",)
    assert "spec.headGroupSpec.template.spec.containers[0].env[0].value" in change.secret
    assert change.origin == 'resource "demo"'


def test_other_steps_are_left_out() -> None:
    same = step("same", cluster(2, wire=True), cluster(2, wire=True))
    operator = {
        "op": "update",
        "urn": "urn:pulumi:dev::p::kubernetes:apps/v1:Deployment::ray-operator",
        "newState": {"type": "kubernetes:apps/v1:Deployment", "inputs": {}},
    }
    assert from_preview(digest(same, operator)) == []


@pytest.mark.parametrize(
    ("ops", "create_first"),
    [
        (("create-replacement", "replace", "delete-replaced"), True),
        (("delete-replaced", "replace", "create-replacement"), False),
    ],
)
def test_a_replacement_is_one_change(ops: tuple[str, ...], create_first: bool) -> None:
    old, new = cluster(2, wire=True), cluster(3, wire=True)
    steps = [step(op, old, new, replaceReasons=["metadata.name"]) for op in ops]
    [change] = from_preview(digest(*steps))
    assert change.op == "replace"
    assert change.create_before_delete is create_first
    assert change.replace_reasons == ("metadata.name",)


def test_an_unknown_value_is_known_at_deploy() -> None:
    new = cluster(2, wire=True, image=UNKNOWN)
    [change] = from_preview(digest(step("update", cluster(2, wire=True), new)))
    assert "spec.headGroupSpec.template.spec.containers[0].image" in change.unknown
    report = review([change], ReviewSettings())
    [verdict] = report.verdicts
    assert verdict.known_at_deploy
    assert "known-at-deploy" in {f.rule for f in verdict.findings}
    assert "known at deploy" in as_text(report)
    assert UNKNOWN not in as_markdown(report) + as_text(report) + as_json(report)


def test_a_secret_the_engine_says_changed_is_named_without_its_value() -> None:
    path = "spec.headGroupSpec.template.spec.containers[0].env[0].value"
    diff = {path: {"kind": "update", "inputDiff": False}}
    old, new = cluster(2, wire=True), cluster(2, wire=True)
    [change] = from_preview(digest(step("update", old, new, diff)))
    [verdict] = review([change], ReviewSettings()).verdicts
    assert verdict.known_at_deploy
    assert any(path in effect for effect in verdict.effects)


def _with_plaintext_secrets(document: dict[str, Any]) -> dict[str, Any]:
    text = json.dumps(document).replace(json.dumps(secret()), json.dumps(secret(plain=True)))
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def test_a_secret_never_reaches_any_format(tmp_path: Path) -> None:
    # --show-secrets puts the plaintext into the preview; the report still never has it.
    old = _with_plaintext_secrets(cluster(2, wire=True))
    new = _with_plaintext_secrets(cluster(3, wire=True, image="rayproject/ray:2.53.0"))
    assert SECRET_VALUE in json.dumps(new)
    preview = tmp_path / "preview.json"
    preview.write_text(digest(step("update", old, new), step("delete", old, None)))
    for form in ("markdown", "text", "json", "sarif"):
        full = tmp_path / f"full.{form}"
        code, out, err = run("review", str(preview), "--format", form, "--output", str(full))
        assert code == 0, err
        assert SECRET_VALUE not in out + err + full.read_text()


def test_no_ray_change_is_one_line() -> None:
    report = review(from_preview(digest()), ReviewSettings())
    assert as_text(report) == "No ray.io/v1 object changes.\n"
    assert as_markdown(report).count("\n") == 2  # the marker, the headline


def test_what_is_not_a_preview_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not the JSON"):
        from_preview("Previewing update (dev):")
    with pytest.raises(InputError, match="no `steps`"):
        from_preview("[]")
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert run("review", str(bad))[0] == 2
    assert run("review")[0] == 2


def test_the_exit_code_follows_the_levels(tmp_path: Path) -> None:
    preview = tmp_path / "preview.json"
    before, after = cluster(2, wire=True), cluster(2, wire=True, image="rayproject/ray:2.53.0")
    preview.write_text(digest(step("update", before, after)))
    assert run("review", str(preview))[0] == 0
    code, out, _ = run("review", str(preview), "--level", "template-not-rolled=block")
    assert code == 1
    assert "BLOCK template-not-rolled" in out
    assert run("review", str(preview), "--level", "no-such-rule=block")[0] == 2


def test_two_manifests_as_render_diff_takes_them(tmp_path: Path) -> None:
    before, after = tmp_path / "before.yaml", tmp_path / "after.yaml"
    before.write_text(yaml.safe_dump(cluster(2)))
    after.write_text(yaml.safe_dump(cluster(1)))
    code, out, err = run(
        "review", "--before", str(before), "--after", str(after), "--format", "json"
    )
    assert code == 0, err
    [obj] = json.loads(out)["objects"]
    assert (obj["op"], obj["pods"]["deleted"]) == ("update", 1)


def test_an_unknown_count_makes_the_whole_verdict_known_at_deploy() -> None:
    new = cluster(2, wire=True)
    new["spec"]["workerGroupSpecs"][0]["replicas"] = UNKNOWN
    [change] = from_preview(digest(step("update", cluster(2, wire=True), new)))
    [verdict] = review([change], ReviewSettings()).verdicts
    assert verdict.summary == "known at deploy"
    assert [f.rule for f in verdict.findings] == ["known-at-deploy"]


def test_two_programs_as_render_diff_takes_them(tmp_path: Path) -> None:
    # The quickstart, then the same with three workers of 2 CPU: run under mocks.
    quickstart = Path(__file__).parents[2] / "examples" / "quickstart"
    image = "registry.example.com/ray-operator@sha256:" + "0" * 64
    for side in ("before", "after"):
        folder = tmp_path / side
        folder.mkdir()
        for name in ("Pulumi.yaml", "__main__.py"):
            (folder / name).write_text((quickstart / name).read_text())
        (folder / "Pulumi.dev.yaml").write_text(
            yaml.safe_dump({"config": {"ray-quickstart:operatorImage": image}})
        )
    program = tmp_path / "after" / "__main__.py"
    text = program.read_text().replace('"replicas": 2', '"replicas": 3')
    program.write_text(text)
    before, after = str(tmp_path / "before"), str(tmp_path / "after")
    code, out, err = run("review", "--before", before, "--after", after, "--stack", "dev")
    assert code == 0, err
    assert out.startswith("1 Ray object(s) change · pods +1 -0 · CPU 0 · no findings")
    assert "worker group cpu: 2 -> 3 pods, 1 created" in out


REAL = Path(__file__).parent / "review_golden"
"""Two previews of the real engine (their ray.io steps, without the stack's config),
written by tests/e2e/test_review_preview.py: the quickstart's replicas 2 -> 3 and
batch-rayjob's entrypoint change (a new RayJob name: three steps of one URN)."""


@pytest.mark.parametrize(
    ("preview", "op", "changed", "pods"),
    [
        ("quickstart-replicas", "update", ("spec.workerGroupSpecs[cpu].replicas",), (1, 0)),
        ("batch-rayjob-entrypoint", "replace", ("metadata.name", "spec.entrypoint"), (3, 3)),
    ],
)
def test_a_real_engine_preview_reads_as_the_hand_made_ones(
    preview: str, op: str, changed: tuple[str, ...], pods: tuple[int, int]
) -> None:
    [change] = from_preview((REAL / f"{preview}-preview.json").read_text())
    assert (change.op, change.changed) == (op, changed)
    assert change.create_before_delete is (op == "replace")
    [verdict] = review([change], ReviewSettings()).verdicts
    assert (verdict.pods_created, verdict.pods_deleted) == pods
