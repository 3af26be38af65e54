"""Every panel query of the Grafana boards, written once: the boards render these strings
and the observability test runs them against a real Prometheus.

A placeholder of three queries in the shared shape, so the Prometheus test can import it;
the boards' full set replaces it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["QUERIES", "Query"]


@dataclass(frozen=True)
class Query:
    board: str
    """The title of the dashboard the panel is on."""
    title: str
    """The panel's title."""
    expr: str
    """PromQL, the one string the board and the tests use."""
    by: tuple[str, ...]
    """Labels every returned series carries (what the panel groups by); () for a scalar."""


QUERIES: Final[tuple[Query, ...]] = (
    Query(
        "RayCluster overview",
        "RayClusters by owner kind",
        "count by (owner_kind) (kuberay_cluster_info)",
        ("owner_kind",),
    ),
    Query(
        "RayJob runs",
        "RayJobs by deployment status",
        "count by (deployment_status) (kuberay_job_deployment_status == 1)",
        ("deployment_status",),
    ),
    Query(
        "RayService health",
        "RayServices not ready",
        'kuberay_service_condition_ready{condition="false"} == 1',
        ("namespace", "name"),
    ),
)
