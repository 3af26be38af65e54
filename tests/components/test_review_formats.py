"""The review's formats: the Markdown comment (golden, size bound, marker), JSON."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

from components.review import (
    GITHUB_COMMENT_LIMIT,
    MARKER,
    ObjectChange,
    ReviewSettings,
    as_json,
    as_markdown,
    from_preview,
    review,
)
from components.review.changes import changed_paths
from tests.components.review_previews import cluster, quickstart_replicas
from tests.components.test_review_raycronjob import cron
from tests.components.test_review_rayjob import job
from tests.components.test_review_rayservice import new_image as new_service_image
from tests.components.test_review_rayservice import service

GOLDEN = Path(__file__).parent / "review_golden"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"


def _golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"{path} is missing; run with UPDATE_GOLDEN=1 and review it"
    assert text == path.read_text(), f"{path} differs; rerun with UPDATE_GOLDEN=1, review the diff"


def test_quickstart_replicas_markdown_is_golden() -> None:
    report = review(from_preview(quickstart_replicas()), ReviewSettings())
    _golden("quickstart-replicas.md", as_markdown(report))


def _team_change(kind: str, index: int) -> ObjectChange:
    """One team's change of ``kind``, each with a finding: a RayCluster's template not
    rolled, a RayService's new cluster, a RayJob's new run, a RayCronJob's template
    (its feature gate off)."""
    name = f"team-{index:03d}-{kind.lower()}"
    op = "update"
    if kind == "RayCluster":
        before, after = cluster(2), cluster(3, image="rayproject/ray:2.53.0")
    elif kind == "RayService":
        before = service()
        after = copy.deepcopy(before)
        new_service_image(after)
    elif kind == "RayJob":
        before, after, op = job(), job(entrypoint="python b.py"), "replace"
    else:
        before = cron()
        after = copy.deepcopy(before)
        after["spec"]["jobTemplate"]["entrypoint"] = "python b.py"
    for document in (before, after):
        document["metadata"]["name"] = name
    return ObjectChange(
        kind=kind,
        namespace="default",
        name=name,
        op=op,  # type: ignore[arg-type]
        before=before,
        after=after,
        changed=tuple(changed_paths(before, after)),
        create_before_delete=op == "replace",
    )


KINDS = ("RayCluster", "RayService", "RayJob", "RayCronJob")


def _many(count: int, kinds: tuple[str, ...] = KINDS) -> list[ObjectChange]:
    return [_team_change(kinds[index % len(kinds)], index) for index in range(count)]


def test_500_objects_fit_a_comment_with_every_finding() -> None:
    report = review(_many(500), ReviewSettings())
    assert len(report.findings) == 500
    assert {v.kind for v in report.verdicts} == set(KINDS)
    full = as_markdown(report, limit=10**9)
    assert len(full) > GITHUB_COMMENT_LIMIT  # the case is worth testing
    comment = as_markdown(report, full_report="review.md")
    print(f"\n500 objects of every kind: {len(full)} characters in full, {len(comment)} trimmed")
    assert len(comment) <= GITHUB_COMMENT_LIMIT
    assert comment.startswith(MARKER + "\n### Ray review: 500 Ray object(s) change")
    for finding in report.findings:
        assert finding.ref.split("/", 1)[1] in comment
    assert "The full report is in `review.md`" in comment


def test_a_small_limit_drops_details_first() -> None:
    report = review(_many(3, ("RayCluster",)), ReviewSettings())
    full = as_markdown(report, limit=10**9)
    trimmed = as_markdown(report, limit=len(full) - 10)
    assert len(trimmed) < len(full)
    assert trimmed.count("| RayCluster default/team-") == 3  # every verdict row stays
    assert "object detail(s) left out" in trimmed


def test_json_has_a_versioned_schema() -> None:
    report = review(from_preview(quickstart_replicas()), ReviewSettings())
    document = json.loads(as_json(report))
    assert document["schema"] == "pulumi-ray.io/review/v1"
    assert document["totals"]["pods"] == {
        "before": 3,
        "after": 4,
        "created": 1,
        "deleted": 0,
        "peak": 4,
    }
    assert document["totals"]["after"]["memory"] == "8Gi"
    [obj] = document["objects"]
    assert obj["summary"] == "1 pod(s) created"


def test_the_ledger_gives_the_autoscalers_range() -> None:
    before = cluster(2, enableInTreeAutoscaling=True)
    after = cluster(3, enableInTreeAutoscaling=True)
    change = ObjectChange(
        kind="RayCluster",
        namespace="default",
        name="demo",
        op="update",
        before=before,
        after=after,
        changed=tuple(changed_paths(before, after)),
    )
    report = review([change], ReviewSettings())
    assert "may range over CPU 1 to 5, memory 2Gi to 10Gi" in as_markdown(report)
    bounds = json.loads(as_json(report))["objects"][0]["resources"]["autoscaler"]
    assert (bounds["min"]["cpu"], bounds["max"]["cpu"]) == ("1", "5")


def test_the_package_exports_are_real() -> None:
    import components.review as package

    assert len(set(package.__all__)) == len(package.__all__)  # ruff (RUF022) keeps the order
    assert all(hasattr(package, name) for name in package.__all__)
