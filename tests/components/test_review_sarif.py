"""The review as SARIF 2.1.0: one result per finding, the review's rules and levels,
locations in the program where the review can tell, and never a value of the objects."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from components.review import RULES, Program, ReviewSettings, as_sarif, from_preview, review
from tests.components.review_previews import SECRET_VALUE, cluster, digest, run_cli, state, step

SUBSET = json.loads((Path(__file__).parent / "sarif_subset.schema.json").read_text())
QUICKSTART = Path(__file__).parents[2] / "examples" / "quickstart"


def run(*argv: str) -> tuple[int, dict[str, Any], str]:
    code, out, err = run_cli(*argv)
    return code, json.loads(out) if out else {}, err


def _valid(log: dict[str, Any]) -> dict[str, Any]:
    jsonschema.validate(log, SUBSET, format_checker=jsonschema.FormatChecker())
    [one_run] = log["runs"]
    return one_run  # type: ignore[no-any-return]


def _preview(tmp_path: Path) -> Path:
    """An image change (template-not-rolled, a warning) and a deletion (cluster-deleted)."""
    before, after = cluster(2, wire=True), cluster(2, wire=True, image="rayproject/ray:2.53.0")
    gone = cluster(1, wire=True)
    gone["metadata"]["name"] = "old"
    deletion = step("delete", gone, None)
    deletion["urn"] = deletion["oldState"]["urn"] = state(gone, "old")["urn"]
    preview = tmp_path / "preview.json"
    preview.write_text(digest(step("update", before, after), deletion))
    return preview


def test_one_result_per_finding_with_the_reviews_rules(tmp_path: Path) -> None:
    code, log, err = run(
        "review", str(_preview(tmp_path)), "--format", "sarif", "--level", "cluster-deleted=block"
    )
    assert code == 1, err  # the exit code is the same whatever the format
    sarif_run = _valid(log)
    rules = sarif_run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == sorted(RULES)
    levels = {r["id"]: r["defaultConfiguration"]["level"] for r in rules}
    assert levels["invalid-object"] == "error"
    assert levels["template-not-rolled"] == "warning"
    results = {r["ruleId"]: r for r in sarif_run["results"]}
    assert set(results) == {"cluster-deleted", "template-not-rolled"}
    assert results["cluster-deleted"]["level"] == "error"  # raised by --level
    assert results["template-not-rolled"]["level"] == "warning"
    for result in sarif_run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]


def test_a_preview_without_its_program_locates_objects_by_urn(tmp_path: Path) -> None:
    _, log, _ = run("review", str(_preview(tmp_path)), "--format", "sarif")
    by_rule = {r["ruleId"]: r for r in _valid(log)["results"]}
    [location] = by_rule["cluster-deleted"]["locations"]
    assert "physicalLocation" not in location
    assert location["logicalLocations"] == [
        {
            "name": "old",
            "fullyQualifiedName": state(cluster(), "old")["urn"],
            "kind": "resource",
        }
    ]


def test_a_preview_with_its_program_points_at_the_resource(tmp_path: Path) -> None:
    _, log, _ = run(
        "review", str(_preview(tmp_path)), "--format", "sarif", "--program", str(QUICKSTART)
    )
    by_rule = {r["ruleId"]: r for r in _valid(log)["results"]}
    physical = by_rule["template-not-rolled"]["locations"][0]["physicalLocation"]
    main_file = QUICKSTART / "__main__.py"
    line = next(
        n for n, text in enumerate(main_file.read_text().splitlines(), 1) if '"demo"' in text
    )
    assert physical == {
        "artifactLocation": {"uri": str(main_file.relative_to(Path.cwd()))},
        "region": {"startLine": line},
    }
    # A resource the program no longer declares is still in the file, without a line.
    assert "region" not in by_rule["cluster-deleted"]["locations"][0]["physicalLocation"]


def test_two_manifests_point_at_the_objects_name(tmp_path: Path) -> None:
    before, after = tmp_path / "before.yaml", tmp_path / "after.yaml"
    before.write_text(yaml.safe_dump(cluster(2)))
    after.write_text(yaml.safe_dump(cluster(2, image="rayproject/ray:2.53.0")))
    code, log, err = run(
        "review", "--before", str(before), "--after", str(after), "--format", "sarif"
    )
    assert code == 0, err
    [result] = _valid(log)["results"]
    physical = result["locations"][0]["physicalLocation"]
    assert physical["artifactLocation"]["uri"] == after.as_uri()  # outside the working folder
    lines = after.read_text().splitlines()
    assert lines[physical["region"]["startLine"] - 1].strip() == "name: demo"
    assert result["locations"][0]["logicalLocations"][0]["fullyQualifiedName"] == (
        "RayCluster/default/demo"
    )


def test_a_program_folder_finds_its_main_file(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.yaml").write_text("name: p\nruntime: python\nmain: src/\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "__main__.py").write_text("")
    assert Program(str(tmp_path)).file() == tmp_path / "src" / "__main__.py"
    (tmp_path / "Pulumi.yaml").write_text("name: p\nruntime: yaml\nresources: {}\n")
    assert Program(str(tmp_path)).file() == tmp_path / "Pulumi.yaml"
    assert Program(str(tmp_path / "missing")).file() is None
    assert Program(None).file() is None


def test_no_change_is_a_valid_log_without_results() -> None:
    log = json.loads(as_sarif(review(from_preview(digest()), ReviewSettings())))
    assert _valid(log)["results"] == []


def test_no_value_reaches_sarif(tmp_path: Path) -> None:
    old, new = cluster(2, wire=True), cluster(3, wire=True, image="rayproject/ray:2.53.0")
    # Beside the wire form's secret env, a plain env value: neither is ever printed.
    container = new["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    container["env"].append({"name": "PLAIN", "value": SECRET_VALUE})
    preview = tmp_path / "preview.json"
    preview.write_text(digest(step("update", old, new)))
    _, text, _ = run_cli("review", str(preview), "--format", "sarif", "--program", str(QUICKSTART))
    assert "template-not-rolled" in text
    assert SECRET_VALUE not in text
    assert "2.53.0" not in text and "rayproject" not in text  # no value of the spec at all
