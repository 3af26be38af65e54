"""The policy pack's organisation rules in the review (``--policy-config``): the same
checks the pack serves, one home for each, at the level the pack's config gives."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.policy import image_lines
from components.policy.rules import API_CHECK, ORGANISATION_CHECKS
from components.rendering import InputError
from components.review import RULES, ReviewSettings, from_preview, review
from components.review.policies import parse_policy_config, with_policies
from tests.components.review_previews import UNKNOWN, cluster, digest, step
from tests.components.review_previews import run_cli as run

ALLOWED: dict[str, Any] = {
    "ray-image-allow-list": {"allowedPrefixes": ["registry.example.com/ray/"]},
    "ray-resource-limits": "disabled",  # the fixtures set requests only
}


def _manifests(tmp_path: Path, config: object) -> list[str]:
    before, after, policy = (tmp_path / n for n in ("before.yaml", "after.yaml", "policy.json"))
    before.write_text(yaml.safe_dump(cluster(2)))
    after.write_text(yaml.safe_dump(cluster(3)))
    policy.write_text(json.dumps(config))
    sides = ["--before", str(before), "--after", str(after)]
    return ["review", *sides, "--policy-config", str(policy)]


def test_the_packs_rules_are_the_reviews_rules() -> None:
    for check in ORGANISATION_CHECKS:
        assert RULES[check.name] == ("block", check.description)  # mandatory, as in the pack
    assert API_CHECK.name not in RULES  # invalid-object: the verdicts' own load_object


def test_a_violation_is_a_finding_without_the_spec_value(tmp_path: Path) -> None:
    code, out, err = run(*_manifests(tmp_path, ALLOWED), "--format", "json")
    assert code == 1, err
    findings = json.loads(out)["findings"]
    assert {f["rule"] for f in findings} == {"ray-image-allow-list"}
    paths = sorted(f["message"].split(": ", 1)[0] for f in findings)
    assert paths == [
        "spec.headGroupSpec.template.spec.containers[0].image",
        "spec.workerGroupSpecs[0].template.spec.containers[0].image",
    ]
    # The pack's line for the same object says the same, and names the image too.
    [pack_line, _] = image_lines(cluster(3), ["registry.example.com/ray/"])
    assert findings[0]["message"] == f"{pack_line.path}: {pack_line.hint} [{pack_line.code}]"
    assert "rayproject/ray" in pack_line
    for form in ("text", "markdown", "json", "sarif"):
        assert "rayproject/ray" not in run(*_manifests(tmp_path, ALLOWED), "--format", form)[1]


@pytest.mark.parametrize(
    ("level", "code", "shown"),
    [
        ("advisory", 0, "WARN ray-image-allow-list"),
        ("disabled", 0, None),
        ("mandatory", 1, "BLOCK"),
    ],
)
def test_the_configs_enforcement_level_is_the_findings(
    tmp_path: Path, level: str, code: int, shown: str | None
) -> None:
    config = {
        **ALLOWED,
        "ray-image-allow-list": {**ALLOWED["ray-image-allow-list"], "enforcementLevel": level},
    }
    got, out, _ = run(*_manifests(tmp_path, config))
    assert got == code
    assert (shown in out) if shown else ("ray-image-allow-list" not in out)


def test_level_overrides_the_config(tmp_path: Path) -> None:
    code, out, _ = run(*_manifests(tmp_path, ALLOWED), "--level", "ray-image-allow-list=warn")
    assert (code, "WARN ray-image-allow-list" in out) == (0, True)
    simple = {"ray-no-delete-self": "advisory", **ALLOWED}
    assert run(*_manifests(tmp_path, simple))[0] == 1


def test_a_value_known_at_deploy_is_not_judged() -> None:
    after = cluster(3, wire=True)
    for group in (after["spec"]["headGroupSpec"], after["spec"]["workerGroupSpecs"][0]):
        group["template"]["spec"]["containers"][0]["image"] = UNKNOWN
    changes = from_preview(digest(step("update", cluster(2, wire=True), after)))
    report = with_policies(
        review(changes, ReviewSettings()),
        changes,
        parse_policy_config(json.dumps(ALLOWED), source="policy.json"),
        ReviewSettings(),
    )
    assert not any(f.rule.startswith("ray-") for f in report.findings)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "not JSON"),
        ("[]", "an object of policy names"),
        ('{"ray-everything": {}}', "none of the pack's policies"),
        ('{"ray-gpu-caps": "strict"}', "give one of mandatory, advisory, disabled"),
    ],
)
def test_a_bad_config_is_refused(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_policy_config(text, source="policy.json")
