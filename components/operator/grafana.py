"""The Grafana boards of the operator, as ConfigMaps for the Grafana sidecar.

kube-prometheus-stack's Grafana runs a sidecar that loads every ConfigMap carrying a
label (``grafana_dashboard: "1"`` by default) as dashboards, one per data key, into the
folder an annotation names when the chart sets ``folderAnnotation``. So the component
needs no Grafana API and no credentials: one ConfigMap per board, and Grafana picks it
up, deletes it with the ConfigMap, and updates it when a new version changes it.

The boards' JSON is generated from ``queries.QUERIES`` by ``python -m hack.dashboards``
with Grafana's own ``grafana-foundation-sdk``, and committed in ``boards/`` (a test and
``make lint`` hold it to what the generator makes now, as for the CRDs). Committed, so a
Pulumi program, in any language, needs no Grafana library: the SDK is a development
tool, and the files can be imported into a Grafana by hand too
(``python -m pulumi_ray dashboards``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Final

import pulumi
import pulumi_kubernetes as k8s

from .args import Plan
from .queries import CLUSTERS, JOBS, OPERATOR, SERVICES

__all__ = [
    "BOARDS",
    "BOARDS_DIR",
    "DEFAULT_DASHBOARD_LABELS",
    "FOLDER_ANNOTATION",
    "Board",
    "create_dashboards",
]

BOARDS_DIR: Final = Path(__file__).with_name("boards")
DEFAULT_DASHBOARD_LABELS: Final = MappingProxyType({"grafana_dashboard": "1"})
"""What kube-prometheus-stack's sidecar selects by (its ``sidecar.dashboards.label`` and
``labelValue``)."""
FOLDER_ANNOTATION: Final = "grafana_folder"
"""The annotation the sidecar's ``folderAnnotation`` is usually set to."""


@dataclass(frozen=True)
class Board:
    """One dashboard: its title (``Query.board``) and the short name its file, its
    Grafana uid and its ConfigMap are made from."""

    title: str
    slug: str

    @property
    def uid(self) -> str:
        """Fixed, so a link to a board survives its update (Grafana keys boards by uid)."""
        return f"ray-{self.slug}"

    @property
    def path(self) -> Path:
        return BOARDS_DIR / f"{self.slug}.json"

    def json(self) -> str:
        """The dashboard's JSON, as committed."""
        return self.path.read_text()


BOARDS: Final = (
    Board(CLUSTERS, "rayclusters"),
    Board(JOBS, "rayjobs"),
    Board(SERVICES, "rayservices"),
    Board(OPERATOR, "operator"),
)


def create_dashboards(
    parent: pulumi.Resource, plan: Plan, namespace: pulumi.Input[str]
) -> list[k8s.core.v1.ConfigMap]:
    """One ConfigMap per board, labelled for the sidecar, in ``namespace`` unless the plan
    names Grafana's."""
    annotations = {FOLDER_ANNOTATION: plan.grafana_folder} if plan.grafana_folder else None
    return [
        k8s.core.v1.ConfigMap(
            f"{plan.resource_name}-dashboard-{board.slug}",
            metadata=plan.metadata(
                f"{plan.base_name}-dashboard-{board.slug}",
                plan.grafana_dashboard_namespace or namespace,
                plan.grafana_dashboard_labels,
                annotations,
            ),
            data={f"{board.uid}.json": board.json()},
            opts=plan.child(parent),
        )
        for board in BOARDS
    ]
