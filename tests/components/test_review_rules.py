"""The review's rule levels (warn, block, off), the quota on a change's peak, and prices."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from components.review import (
    Report,
    ReviewSettings,
    Verdict,
    as_json,
    as_markdown,
    as_text,
    from_preview,
    parse_level,
    parse_prices,
    parse_quota,
    review,
    with_quota,
)
from operator_runtime.render.resources import amount
from tests.components.review_previews import cluster, digest, quickstart_replicas, step
from tests.components.review_previews import run_cli as run


def _image_change(tmp_path: Path) -> str:
    """A preview whose only finding is ``template-not-rolled`` (a warning)."""
    preview = tmp_path / "preview.json"
    before, after = cluster(2, wire=True), cluster(2, wire=True, image="rayproject/ray:2.53.0")
    preview.write_text(digest(step("update", before, after)))
    return str(preview)


def _quickstart(tmp_path: Path) -> str:
    preview = tmp_path / "quickstart.json"
    preview.write_text(quickstart_replicas())  # 3 -> 4 CPU, 6Gi -> 8Gi
    return str(preview)


def test_a_rule_turned_off_gives_no_finding(tmp_path: Path) -> None:
    preview = _image_change(tmp_path)
    code, out, _ = run("review", preview, "--level", "template-not-rolled=block")
    assert (code, "BLOCK template-not-rolled" in out) == (1, True)
    code, out, _ = run("review", preview, "--level", "template-not-rolled=off")
    assert code == 0
    assert "template-not-rolled" not in out
    assert "no findings" in out.splitlines()[0]


def test_parse_level_names_the_choices() -> None:
    assert parse_level("cluster-deleted=off") == ("cluster-deleted", "off")
    with pytest.raises(ValueError, match="RULE=warn, RULE=block or RULE=off"):
        parse_level("cluster-deleted=error")
    with pytest.raises(ValueError, match="unknown rule 'nope'"):
        parse_level("nope=warn")


def test_a_peak_over_the_quota_blocks_by_default(tmp_path: Path) -> None:
    preview = _quickstart(tmp_path)
    assert run("review", preview, "--quota", "cpu=4")[0] == 0  # the peak is 4: at the quota
    code, out, _ = run("review", preview, "--quota", "cpu=3,memory=64Gi")
    assert code == 1
    assert (
        "BLOCK quota-exceeded RayCluster default/demo: the change's peak exceeds the quota: "
        "cpu 4 > 3 (cpu 3 before, 4 at its peak)"
    ) in out
    code, out, _ = run("review", preview, "--quota", "cpu=3", "--level", "quota-exceeded=warn")
    assert (code, "WARN quota-exceeded" in out) == (0, True)
    assert run("review", preview, "--quota", "cpu=3", "--level", "quota-exceeded=off")[0] == 0


def _verdict(name: str, before: str, after: str, peak: str) -> Verdict:
    def cpu(value: str) -> dict[str, object]:
        parsed = amount(value)
        assert parsed is not None
        return {"cpu": parsed}

    return Verdict(
        kind="RayService",
        namespace="serve",
        name=name,
        op="update",
        summary="a new cluster",
        before=cpu(before),  # type: ignore[arg-type]
        after=cpu(after),  # type: ignore[arg-type]
        peak=cpu(peak),  # type: ignore[arg-type]
    )


def test_the_quota_holds_the_peak_not_the_after_side() -> None:
    # A RayService upgrade: 8 CPU before and after, 16 while both clusters run.
    upgrade = _verdict("llm", "8", "8", "16")
    steady = _verdict("steady", "4", "4", "4")
    report = with_quota(Report((upgrade, steady)), parse_quota("cpu=12"), ReviewSettings())
    flagged = {v.name: [f.rule for f in v.findings] for v in report.verdicts}
    # Only the object that grows during the change is named: the other holds what it held.
    assert flagged == {"llm": ["quota-exceeded"], "steady": []}
    [finding] = report.findings
    assert finding.message == (
        "the change's peak exceeds the quota: cpu 20 > 12 (cpu 8 before, 16 at its peak)"
    )
    assert with_quota(Report((upgrade,)), parse_quota("cpu=16"), ReviewSettings()).findings == ()


def test_a_quota_already_exceeded_names_every_object_that_holds_it() -> None:
    report = with_quota(
        Report((_verdict("a", "8", "8", "8"), _verdict("b", "8", "4", "8"))),
        parse_quota("cpu=10"),
        ReviewSettings(),
    )
    assert [f.ref for f in report.findings] == ["RayService serve/a", "RayService serve/b"]


@pytest.mark.parametrize(
    ("parse", "text", "message"),
    [
        (parse_quota, "cpu", "give RESOURCE=VALUE"),
        (parse_quota, "disk=1", "give RESOURCE=VALUE"),
        (parse_quota, "cpu=lots", "not a Kubernetes quantity"),
        (parse_quota, "", "at least one"),
        (parse_prices, "memory=0.004", "per GiB and hour"),
        (parse_prices, "cpu=-1/h", "not negative"),
        (parse_prices, "cpu=cheap/h", "give a number /h"),
        (parse_prices, "ram=1/h", "give RESOURCE=VALUE"),
    ],
)
def test_a_bad_quota_or_price_is_refused(parse: Any, text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse(text)


def test_prices_are_per_hour_and_memory_per_gib() -> None:
    prices = parse_prices("cpu=0.03/h, gpu=2.5, memory=0.004/GiB-h")
    assert prices.per_hour == {
        "cpu": Fraction(3, 100),
        "gpu": Fraction(5, 2),
        "memory": Fraction(4, 1000),
    }
    resources = {key: amount(value) for key, value in (("cpu", "500m"), ("memory", "512Mi"))}
    assert prices.hourly(resources) == Fraction(3, 200) + Fraction(2, 1000)  # type: ignore[arg-type]


def test_costs_in_every_format(tmp_path: Path) -> None:
    report = review(from_preview(quickstart_replicas()), ReviewSettings())
    prices = parse_prices("cpu=0.03/h,memory=0.004/GiB-h")
    # CPU 3 -> 4 at 0.03, memory 6 -> 8 GiB at 0.004: 0.114 -> 0.152 an hour.
    text = as_text(report, prices=prices)
    assert text.splitlines()[0].endswith("· cost/h 0.11 → 0.15 · no findings")
    assert "  cost/h 0.11 -> 0.15\n" in text
    assert "cost/h in total: 0.11 -> 0.15, 0.15 at the peak" in text
    comment = as_markdown(report, prices=prices)
    assert "| Cost per hour | 0.11 | 0.15 | 0.15 |" in comment
    assert "- cost per hour: 0.11 → 0.15" in comment
    document = json.loads(as_json(report, prices=prices))
    assert document["totals"]["costPerHour"] == {"before": 0.114, "after": 0.152, "peak": 0.152}
    assert document["objects"][0]["costPerHour"]["after"] == 0.152
    assert "costPerHour" not in json.loads(as_json(report))["totals"]
    code, out, err = run("review", _quickstart(tmp_path), "--price", "memory=0.004")
    assert (code, out) == (2, "")
    assert "per GiB and hour" in err


def test_a_tiny_cost_is_not_rounded_to_zero() -> None:
    report = review(from_preview(quickstart_replicas()), ReviewSettings())
    text = as_text(report, prices=parse_prices("memory=0.0001/GiB-h"))
    assert "cost/h 0.0006 -> 0.0008" in text


def test_a_rayservice_upgrade_over_the_quota_is_named_by_its_peak() -> None:
    # The RayService verdict's own peak: the old cluster (3 CPU) and the new one side by side.
    from tests.components.test_review_rayservice import BASE, change, edited, new_image

    report = review([change(BASE, edited(BASE, new_image))], ReviewSettings())
    [verdict] = report.verdicts
    assert (verdict.before["cpu"].value, verdict.peak["cpu"].value) == (3, 6)
    assert with_quota(report, parse_quota("cpu=6"), ReviewSettings()).findings == report.findings
    [finding] = [
        f
        for f in with_quota(report, parse_quota("cpu=5"), ReviewSettings()).findings
        if f.rule == "quota-exceeded"
    ]
    assert (finding.level, finding.ref) == ("block", "RayService default/serve")
    assert finding.message.endswith("cpu 6 > 5 (cpu 3 before, 6 at its peak)")


def test_500_objects_over_the_quota_with_prices_fit_a_comment() -> None:
    from components.review import GITHUB_COMMENT_LIMIT
    from tests.components.test_review_formats import _many

    report = with_quota(
        review(_many(500), ReviewSettings()), parse_quota("cpu=1"), ReviewSettings()
    )
    # A RayCronJob's ledger holds no run before or after a change: no quota finding.
    held = sum(v.kind != "RayCronJob" for v in report.verdicts)
    assert sum(f.rule == "quota-exceeded" for f in report.findings) == held == 375
    comment = as_markdown(report, prices=parse_prices("cpu=0.03/h"), full_report="review.md")
    assert len(comment) <= GITHUB_COMMENT_LIMIT
    assert "`quota-exceeded` (375)" in comment
    for finding in report.findings:
        assert finding.ref.split("/", 1)[1] in comment
