"""``python -m hack.dashboards``: the Grafana boards, generated from the panel queries::

    python -m hack.dashboards           # rewrite components/operator/boards/*.json
    python -m hack.dashboards --check   # exit 1 with a diff if a committed board is stale

Each board is built with Grafana's own ``grafana-foundation-sdk`` (typed builders of
Grafana's dashboard model, so a misspelt option fails here, not in a user's Grafana) from
``components.operator.queries.QUERIES``: one panel per query, its one target that query's
``expr``. This module decides only how a panel looks (``STYLES``: the visualisation, the
unit, the description) and where it sits; what it shows is the query's.

The SDK is a development dependency (the ``test`` extra), not the package's: the
generated JSON is committed, and ``RayOperator`` puts it into ConfigMaps as it is. The
output is deterministic (sorted keys, panel ids and positions from the order of
``QUERIES``), so a change shows as a reviewable diff of the files.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal, Protocol, Self, TypeVar

from grafana_foundation_sdk.builders import bargauge, piechart, stat, table, timeseries
from grafana_foundation_sdk.builders.dashboard import Dashboard, DatasourceVariable
from grafana_foundation_sdk.builders.prometheus import Dataquery
from grafana_foundation_sdk.cog import variants
from grafana_foundation_sdk.cog.builder import Builder
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import (
    DataSourceRef,
    DataTransformerConfig,
    GridPos,
    Panel,
)
from grafana_foundation_sdk.models.prometheus import PromQueryFormat

from components.operator.grafana import BOARDS, Board
from components.operator.queries import QUERIES, Query

__all__ = ["STYLES", "Style", "board_json", "main"]

Kind = Literal["stat", "timeseries", "table", "bargauge", "piechart"]


@dataclass(frozen=True)
class Style:
    """How one panel shows its query."""

    kind: Kind
    description: str
    unit: str = "short"
    hide_value: bool = False
    """A table listing objects (the query's value is always 1): show only their labels."""


_COUNT: Final = "short"
_SECONDS: Final = "s"
_PER_SECOND: Final = "reqps"

STYLES: Final[dict[str, Style]] = {
    # Ray / RayClusters
    "RayClusters": Style("stat", "RayClusters that exist."),
    "Provisioned": Style(
        "stat", "RayClusters whose pods were all Running and Ready at least once."
    ),
    "Not provisioned": Style(
        "stat", "RayClusters still waiting for all their pods to be Running and Ready."
    ),
    "Provisioning time, average": Style(
        "stat",
        "Seconds from a RayCluster's creation to its first time provisioned, averaged.",
        _SECONDS,
    ),
    "Provisioning time, P99": Style(
        "stat", "The same, the slowest 1 % of the RayClusters.", _SECONDS
    ),
    "RayClusters by owner kind": Style(
        "piechart", "Who made the RayClusters: None (directly), RayJob or RayService."
    ),
    "RayClusters not provisioned": Style(
        "table", "RayClusters still provisioning, or stuck.", hide_value=True
    ),
    "Provisioning time by RayCluster": Style(
        "bargauge", "Each RayCluster's time to provisioned.", _SECONDS
    ),
    # Ray / RayJobs
    "RayJobs": Style("stat", "RayJobs that exist."),
    "RayJobs by deployment status": Style(
        "piechart", "RayJobs per status.jobDeploymentStatus (New: not handled yet)."
    ),
    "Failed": Style("stat", "RayJobs whose deployment status is Failed."),
    "Execution time, average": Style(
        "stat",
        "Seconds from a RayJob's start to Complete, Failed or Retrying, averaged over the "
        "attempts that ended.",
        _SECONDS,
    ),
    "Execution time by RayJob": Style(
        "table", "Each ended attempt: its status, retry count and time.", _SECONDS
    ),
    "Failed RayJobs": Style("table", "RayJobs that failed.", hide_value=True),
    "Retried attempts": Style(
        "table",
        "Attempts that failed and were retried (spec.backoffLimit), and their time.",
        _SECONDS,
    ),
    # Ray / RayServices
    "RayServices": Style("stat", "RayServices that exist."),
    "Ready": Style("stat", "RayServices whose Serve applications run and have endpoints."),
    "Not ready": Style("stat", "RayServices that cannot take traffic."),
    "Upgrading": Style("stat", "RayServices preparing a new RayCluster for an upgrade."),
    "RayServices not ready": Style("table", "RayServices not ready.", hide_value=True),
    "RayServices upgrading": Style("table", "RayServices upgrading.", hide_value=True),
    # Ray / Operator
    "Leaders": Style("stat", "Replicas leading, per leader-election Lease: 1 is right."),
    "Reconciles per second": Style(
        "timeseries", "Reconciliations per controller and result.", _PER_SECOND
    ),
    "Reconcile errors per second": Style(
        "timeseries", "Reconciliations that ended in an error, per controller.", _PER_SECOND
    ),
    "Reconcile time, P99": Style(
        "timeseries", "How long one reconciliation takes, per controller.", _SECONDS
    ),
    "Busy workers": Style("timeseries", "Workers reconciling right now, per controller."),
    "Work-queue depth": Style("timeseries", "Objects waiting for a worker, per controller."),
    "Work-queue wait, P99": Style(
        "timeseries", "How long an object waits before a worker takes it.", _SECONDS
    ),
    "Work-queue retries per second": Style(
        "timeseries", "Objects put back with backoff after an error.", _PER_SECOND
    ),
    "API requests per second": Style(
        "timeseries", "Requests to the Kubernetes API server by verb and HTTP code.", _PER_SECOND
    ),
    "API request time, P99": Style(
        "timeseries", "Kubernetes API server latency by verb.", _SECONDS
    ),
}

_DATASOURCE: Final = DataSourceRef(type_val="prometheus", uid="${datasource}")
_WIDTH: Final = 24
_STAT_HEIGHT: Final = 4
_PANEL_HEIGHT: Final = 8


def _target(query: Query, style: Style) -> Dataquery:
    target = Dataquery().expr(query.expr).ref_id("A")
    # A time series plots a range; the others show the latest value of each series.
    target = target.range() if style.kind == "timeseries" else target.instant()
    if style.kind == "table":
        target = target.format(PromQueryFormat.TABLE)
    if query.by:
        target = target.legend_format(" ".join("{{" + label + "}}" for label in query.by))
    return target


def _panel(query: Query, style: Style, number: int, position: GridPos) -> Builder[Panel]:
    common = (query, style, number, position)
    if style.kind == "stat":
        # An empty count means none: show 0, not "No data".
        return _with(stat.Panel(), *common).unit(style.unit).no_value("0")
    if style.kind == "timeseries":
        return _with(timeseries.Panel(), *common).unit(style.unit).min(0)
    if style.kind == "piechart":
        return _with(piechart.Panel(), *common).unit(style.unit)
    if style.kind == "bargauge":
        return _with(bargauge.Panel(), *common).unit(style.unit).min(0)
    panel = _with(table.Panel(), *common).unit(style.unit)
    if style.hide_value:
        panel = panel.with_transformation(_organize(hidden=("Time", "Value")))
    else:
        panel = panel.with_transformation(_organize(hidden=("Time",)))
    return panel


class _PanelBuilder(Protocol):
    """What every panel builder of the SDK has, whatever its visualisation."""

    def title(self, title: str) -> Self: ...
    def description(self, description: str) -> Self: ...
    def datasource(self, datasource: DataSourceRef) -> Self: ...
    def with_target(self, target: Builder[variants.Dataquery]) -> Self: ...
    def id(self, id_val: int) -> Self: ...
    def grid_pos(self, grid_pos: GridPos) -> Self: ...


PanelT = TypeVar("PanelT", bound=_PanelBuilder)


def _with(panel: PanelT, query: Query, style: Style, number: int, position: GridPos) -> PanelT:
    """What every panel has: its place, title, description, data source and query."""
    return (
        panel.id(number)
        .grid_pos(position)
        .title(query.title)
        .description(style.description)
        .datasource(_DATASOURCE)
        .with_target(_target(query, style))
    )


def _organize(hidden: tuple[str, ...]) -> DataTransformerConfig:
    """Grafana's "Organize fields" transformation, hiding ``hidden`` columns."""
    return DataTransformerConfig(
        id_val="organize", options={"excludeByName": dict.fromkeys(hidden, True)}
    )


def _positions(queries: Sequence[Query]) -> list[GridPos]:
    """The single numbers side by side in the first row, then the rest two by two."""
    stats = [q for q in queries if STYLES[q.title].kind == "stat"]
    positions: list[GridPos] = []
    for index, query in enumerate(queries):
        if STYLES[query.title].kind == "stat":
            width = _WIDTH // len(stats)
            positions.append(GridPos(x=index * width, y=0, w=width, h=_STAT_HEIGHT))
            continue
        rest = index - len(stats)
        top = (_STAT_HEIGHT if stats else 0) + (rest // 2) * _PANEL_HEIGHT
        half = _WIDTH // 2
        positions.append(GridPos(x=(rest % 2) * half, y=top, w=half, h=_PANEL_HEIGHT))
    return positions


def build_board(board: Board) -> Dashboard:
    queries = [q for q in QUERIES if q.board == board.title]
    stats = [q for q in queries if STYLES[q.title].kind == "stat"]
    if queries[: len(stats)] != stats:
        raise ValueError(f"{board.title}: put the single numbers first in QUERIES")
    dashboard = (
        Dashboard(board.title)
        .uid(board.uid)
        .tags(["ray", "kuberay"])
        .editable()
        .refresh("30s")
        .time("now-6h", "now")
        .timezone("browser")
        .with_variable(DatasourceVariable("datasource").label("Data source").type("prometheus"))
    )
    positions = _positions(queries)
    for number, (query, position) in enumerate(zip(queries, positions, strict=True), start=1):
        dashboard = dashboard.with_panel(_panel(query, STYLES[query.title], number, position))
    return dashboard


def board_json(board: Board) -> str:
    """The board's JSON as committed: keys sorted, two-space indents, a final newline."""
    return JSONEncoder(sort_keys=True, indent=2).encode(build_board(board).build()) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hack.dashboards", description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 if a committed board is stale")
    args = parser.parse_args(argv)
    stale = 0
    for board in BOARDS:
        built = board_json(board)
        current = board.path.read_text() if board.path.exists() else ""
        if built == current:
            continue
        if args.check:
            stale += 1
            sys.stdout.writelines(
                difflib.unified_diff(
                    current.splitlines(keepends=True),
                    built.splitlines(keepends=True),
                    f"{board.path} (committed)",
                    f"{board.path} (generated)",
                )
            )
        else:
            board.path.parent.mkdir(exist_ok=True)
            board.path.write_text(built)
            print(f"wrote {board.path}")
    if stale:
        print(f"{stale} stale board(s): run `python -m hack.dashboards`", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
