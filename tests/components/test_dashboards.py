"""The Grafana boards under Pulumi mocks: one ConfigMap per board, labelled for the
sidecar of kube-prometheus-stack's Grafana, holding JSON whose panels show exactly
``QUERIES``; the committed JSON is what ``python -m hack.dashboards`` builds now; the
alerts carry runbooks that docs/observability.md explains under their names.

That each query evaluates, and returns series with the labels it promises, against a
real Prometheus scraping the real operator, is the Prometheus tests' (tests/integration).
"""

from __future__ import annotations

import io
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from components.__main__ import main
from components._inputs import RayInputError
from components.operator.grafana import BOARDS, BOARDS_DIR, FOLDER_ANNOTATION
from components.operator.monitoring import ALERTS, RUNBOOK_DOC, rule_groups
from components.operator.queries import QUERIES, Query
from hack import dashboards
from tests.components.test_operator import deploy, operator_args
from tests.components.test_operator_options import CONFIG_MAP, refused
from tests.components.workload_mocks import Registration, Run

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / RUNBOOK_DOC


def boards(result: Run) -> list[Registration]:
    return [r for r in result.of_type(CONFIG_MAP) if "-dashboard-" in r.name]


def targets(board_json: dict[str, Any]) -> list[str]:
    """Every panel target's expr, in panel order."""
    return [target["expr"] for panel in board_json["panels"] for target in panel["targets"]]


def queries_of(title: str) -> list[Query]:
    return [q for q in QUERIES if q.board == title]


# --- the queries -------------------------------------------------------------------------


def test_every_query_is_on_a_board_and_every_board_has_queries() -> None:
    titles = {board.title for board in BOARDS}
    assert {q.board for q in QUERIES} == titles
    # A title is how a panel is found (and the docs name it): unique on its board.
    assert not [k for k, n in Counter((q.board, q.title) for q in QUERIES).items() if n > 1]


def test_every_query_has_a_style_and_every_style_a_query() -> None:
    assert sorted(dashboards.STYLES) == sorted({q.title for q in QUERIES})


def test_a_query_groups_by_the_labels_it_promises() -> None:
    """``by`` is what the Prometheus tests hold every returned series to; it must be what
    the outermost aggregation keeps (a scalar keeps none)."""
    for query in QUERIES:
        outer = re.match(r"(\w+)(?: by \(([^)]*)\))? ?\(", query.expr)
        assert outer, query.expr
        kept = tuple(label.strip() for label in (outer.group(2) or "").split(",") if label)
        if outer.group(1) == "histogram_quantile":
            inner = re.search(r"sum by \(([^)]*)\)", query.expr)
            assert inner, query.expr
            kept = tuple(
                label.strip() for label in inner.group(1).split(",") if label.strip() != "le"
            )
        assert kept == query.by, query


# --- the JSON ----------------------------------------------------------------------------


def test_the_boards_folder_holds_the_boards_and_nothing_else() -> None:
    """A file left behind by a renamed board would ship in the wheel, and in no ConfigMap."""
    assert sorted(BOARDS_DIR.iterdir()) == sorted(board.path for board in BOARDS)


@pytest.mark.parametrize("board", BOARDS, ids=lambda b: b.slug)
def test_the_committed_board_is_what_the_generator_builds(board: Any) -> None:
    assert board.json() == dashboards.board_json(board), (
        f"{board.path.relative_to(REPO)} is stale: run `python -m hack.dashboards`"
    )


@pytest.mark.parametrize("board", BOARDS, ids=lambda b: b.slug)
def test_a_board_shows_its_queries_and_nothing_else(board: Any) -> None:
    parsed = json.loads(board.json())
    assert (parsed["title"], parsed["uid"]) == (board.title, board.uid)
    queries = queries_of(board.title)
    assert [p["title"] for p in parsed["panels"]] == [q.title for q in queries]
    assert targets(parsed) == [q.expr for q in queries]
    for panel in parsed["panels"]:
        # Every panel reads the board's Prometheus, chosen by its variable.
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
    (variable,) = parsed["templating"]["list"]
    assert (variable["name"], variable["type"], variable["query"]) == (
        "datasource",
        "datasource",
        "prometheus",
    )


@pytest.mark.parametrize("board", BOARDS, ids=lambda b: b.slug)
def test_panels_do_not_overlap(board: Any) -> None:
    cells: set[tuple[int, int]] = set()
    for panel in json.loads(board.json())["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        mine = {
            (x, y)
            for x in range(grid["x"], grid["x"] + grid["w"])
            for y in range(grid["y"], grid["y"] + grid["h"])
        }
        assert not mine & cells, panel["title"]
        cells |= mine


# --- the ConfigMaps ----------------------------------------------------------------------


def test_dashboards_are_one_config_map_per_board_for_the_sidecar() -> None:
    result = deploy(operator_args(grafana_dashboards=True, install_crds=False))

    found = boards(result)
    assert [r.inputs["metadata"]["name"] for r in found] == [
        f"ray-operator-dashboard-{board.slug}" for board in BOARDS
    ]
    for registration, board in zip(found, BOARDS, strict=True):
        metadata = registration.inputs["metadata"]
        assert metadata["namespace"] == "ray-system"
        assert metadata["labels"]["grafana_dashboard"] == "1"
        assert metadata["labels"]["app.kubernetes.io/instance"] == "ray-operator"
        assert "annotations" not in metadata
        (key,) = registration.inputs["data"]
        assert key == f"{board.uid}.json"
        parsed = json.loads(registration.inputs["data"][key])
        assert targets(parsed) == [q.expr for q in queries_of(board.title)]
    shown = [expr for r in found for expr in targets(json.loads(*r.inputs["data"].values()))]
    assert shown == [q.expr for q in QUERIES]


def test_label_namespace_and_folder_follow_the_sidecars_settings() -> None:
    args = operator_args(
        grafana_dashboards=True,
        grafana_dashboard_labels={"dashboards": "ray"},
        grafana_dashboard_namespace="monitoring",
        grafana_folder="Ray",
        install_crds=False,
    )
    for registration in boards(deploy(args)):
        metadata = registration.inputs["metadata"]
        assert metadata["namespace"] == "monitoring"
        assert metadata["labels"]["dashboards"] == "ray"
        assert "grafana_dashboard" not in metadata["labels"]
        assert metadata["annotations"] == {FOLDER_ANNOTATION: "Ray"}


def test_no_dashboards_unless_asked() -> None:
    args = operator_args(grafana_folder="Ray", install_crds=False)
    assert boards(deploy(args)) == []
    assert boards(deploy()) == []


@pytest.mark.parametrize(
    ("fields", "path"),
    [
        ({"grafana_dashboard_labels": {}}, "grafana_dashboard_labels"),
        ({"grafana_dashboard_labels": {"grafana_dashboard": "1 2"}}, "grafana_dashboard_labels"),
        ({"grafana_dashboard_namespace": "Monitoring"}, "grafana_dashboard_namespace"),
        ({"grafana_folder": " "}, "grafana_folder"),
    ],
)
def test_sidecar_settings_that_cannot_work_are_refused(fields: dict[str, Any], path: str) -> None:
    error: RayInputError = refused(operator_args(grafana_dashboards=True, **fields))
    assert error.path.startswith(path), error


# --- the command line --------------------------------------------------------------------


def test_the_command_line_lists_prints_and_writes_the_boards(tmp_path: Path) -> None:
    out = io.StringIO()
    assert main(["dashboards"], stdout=out) == 0
    assert [line.split()[0] for line in out.getvalue().splitlines()] == [b.slug for b in BOARDS]

    out = io.StringIO()
    assert main(["dashboards", "rayjobs"], stdout=out) == 0
    assert json.loads(out.getvalue())["uid"] == "ray-rayjobs"

    assert main(["dashboards", "--out", str(tmp_path / "boards")], stdout=io.StringIO()) == 0
    for board in BOARDS:
        assert (tmp_path / "boards" / f"{board.uid}.json").read_text() == board.json()


# --- runbooks ----------------------------------------------------------------------------


def test_every_alert_carries_a_runbook_that_the_doc_explains() -> None:
    headings = set(re.findall(r"^### (\S+)$", DOC.read_text(), flags=re.MULTILINE))
    (group,) = rule_groups("ray.rules")
    for rule, alert in zip(group["rules"], ALERTS, strict=True):
        runbook = rule["annotations"]["runbook"]
        assert runbook.endswith(f"{RUNBOOK_DOC}#{alert.anchor}"), runbook
        assert alert.name in headings, f"{RUNBOOK_DOC} has no heading for {alert.name}"
        # Each heading's anchor (GitHub's: the heading lowercased) is the one linked.
        assert alert.name.lower() == alert.anchor


def test_the_doc_explains_every_panel() -> None:
    text = DOC.read_text()
    for board in BOARDS:
        assert f"### {board.title}" in text
    for query in QUERIES:
        assert f"| {query.title} |" in text, query.title
