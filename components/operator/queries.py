"""Every panel query of the Grafana boards, written once: the boards are generated from
these strings (``python -m hack.dashboards``) and the Prometheus tests evaluate the same
strings against a real Prometheus scraping the real operator, and KubeRay's.

Each query uses only the metric names and labels our operator exports (the ``kuberay_*``
collectors in ``operator_runtime/controllers/*/metrics.py``, the runtime's in
``operator_runtime/runtime/metrics.py``), which are KubeRay's and controller-runtime's,
so the boards read a KubeRay operator too. Choices that are not obvious from a query:

- Counts of Ray objects go through ``group by (namespace, name)`` first. Every replica
  of the operator, standbys included, fills its caches and exports a ``kuberay_*_info``
  series per object (KubeRay's do too), so a bare ``count`` would double with two
  replicas, and during every rolling update. Averages and quantiles need no such step:
  a value repeated by each replica leaves them unchanged.
- The provisioning-time P99 is ``quantile`` over the clusters, not ``histogram_quantile``:
  ``kuberay_cluster_provisioned_duration_seconds`` is a gauge per cluster (the
  observability notes' ``histogram_quantile`` over it returns nothing).
- A RayJob the operator has not handled yet has an empty ``deployment_status`` (KubeRay's
  ``JobDeploymentStatusNew``), which Prometheus drops as a label; it is named ``New`` so
  the status panel shows it and every one of its series carries the label.
- client-go's ``rest_client_requests_total`` (KubeRay's) labels the HTTP ``method``
  where ours labels the Kubernetes ``verb``; ``label_replace`` copies ``method`` into
  ``verb`` when there is one, so the panel groups both operators' requests by ``verb``.
- ``rate`` windows are a fixed ``[5m]``, not Grafana's ``$__rate_interval``: the string
  must be PromQL a plain Prometheus evaluates, and 5 minutes holds ten scrapes at the
  ServiceMonitor's 30 s.

A stat panel whose count has no series (no RayJob failed) shows 0 (the boards set it),
so the queries stay plain and a query that returns nothing means nothing matched.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = [
    "CLUSTERS",
    "JOBS",
    "OPERATOR",
    "QUERIES",
    "SERVICES",
    "Query",
]


@dataclass(frozen=True)
class Query:
    """One panel: where it is, and the PromQL it shows."""

    board: str
    """The dashboard's title the panel is on."""
    title: str
    """The panel's title."""
    expr: str
    """PromQL, written once: the board and the tests use this string."""
    by: tuple[str, ...]
    """Labels every returned series must carry (what the panel groups by); () for a scalar."""


CLUSTERS: Final = "Ray / RayClusters"
JOBS: Final = "Ray / RayJobs"
SERVICES: Final = "Ray / RayServices"
OPERATOR: Final = "Ray / Operator"

_OBJECT: Final = ("namespace", "name")


def _count(selector: str) -> str:
    """How many Ray objects have a series matching ``selector``, each counted once."""
    return f"count(group by (namespace, name) ({selector}))"


def _per_object(selector: str) -> str:
    """One series per Ray object with a series matching ``selector`` (value 1)."""
    return f"group by (namespace, name) ({selector})"


def _p99(histogram: str, by: str) -> str:
    return f"histogram_quantile(0.99, sum by ({by}, le) (rate({histogram}_bucket[5m])))"


_PROVISIONED: Final = "kuberay_cluster_condition_provisioned"
_DURATION: Final = "kuberay_cluster_provisioned_duration_seconds"
_STATUS: Final = "kuberay_job_deployment_status"
_EXECUTION: Final = "kuberay_job_execution_duration_seconds"
_READY: Final = "kuberay_service_condition_ready"
_UPGRADING: Final = "kuberay_service_condition_upgrade_in_progress"

_CLUSTER_QUERIES: Final = (
    Query(CLUSTERS, "RayClusters", _count("kuberay_cluster_info"), ()),
    Query(CLUSTERS, "Provisioned", _count(f'{_PROVISIONED}{{condition="true"}}'), ()),
    Query(CLUSTERS, "Not provisioned", _count(f'{_PROVISIONED}{{condition="false"}}'), ()),
    Query(CLUSTERS, "Provisioning time, average", f"avg({_DURATION})", ()),
    Query(CLUSTERS, "Provisioning time, P99", f"quantile(0.99, {_DURATION})", ()),
    Query(
        CLUSTERS,
        "RayClusters by owner kind",
        "count by (owner_kind) (group by (namespace, name, owner_kind) (kuberay_cluster_info))",
        ("owner_kind",),
    ),
    Query(
        CLUSTERS,
        "RayClusters not provisioned",
        _per_object(f'{_PROVISIONED}{{condition="false"}}'),
        _OBJECT,
    ),
    Query(
        CLUSTERS,
        "Provisioning time by RayCluster",
        f"max by (namespace, name) ({_DURATION})",
        _OBJECT,
    ),
)

_JOB_QUERIES: Final = (
    Query(JOBS, "RayJobs", _count("kuberay_job_info"), ()),
    Query(JOBS, "Failed", _count(f'{_STATUS}{{deployment_status="Failed"}}'), ()),
    Query(JOBS, "Execution time, average", f"avg({_EXECUTION})", ()),
    Query(
        JOBS,
        "RayJobs by deployment status",
        "count by (deployment_status) (label_replace(group by (namespace, name, "
        f'deployment_status) ({_STATUS}), "deployment_status", "New", "deployment_status", ""))',
        ("deployment_status",),
    ),
    Query(JOBS, "Failed RayJobs", _per_object(f'{_STATUS}{{deployment_status="Failed"}}'), _OBJECT),
    Query(
        JOBS,
        "Execution time by RayJob",
        f"max by (namespace, name, job_deployment_status, retry_count) ({_EXECUTION})",
        (*_OBJECT, "job_deployment_status", "retry_count"),
    ),
    Query(
        JOBS,
        "Retried attempts",
        f'max by (namespace, name, retry_count) ({_EXECUTION}{{job_deployment_status="Retrying"}})',
        (*_OBJECT, "retry_count"),
    ),
)

_SERVICE_QUERIES: Final = (
    Query(SERVICES, "RayServices", _count("kuberay_service_info"), ()),
    Query(SERVICES, "Ready", _count(f'{_READY}{{condition="true"}}'), ()),
    Query(SERVICES, "Not ready", _count(f'{_READY}{{condition="false"}}'), ()),
    Query(SERVICES, "Upgrading", _count(f'{_UPGRADING}{{condition="true"}}'), ()),
    Query(
        SERVICES, "RayServices not ready", _per_object(f'{_READY}{{condition="false"}}'), _OBJECT
    ),
    Query(
        SERVICES,
        "RayServices upgrading",
        _per_object(f'{_UPGRADING}{{condition="true"}}'),
        _OBJECT,
    ),
)

_OPERATOR_QUERIES: Final = (
    Query(OPERATOR, "Leaders", "sum by (name) (leader_election_master_status)", ("name",)),
    Query(
        OPERATOR,
        "Reconciles per second",
        "sum by (controller, result) (rate(controller_runtime_reconcile_total[5m]))",
        ("controller", "result"),
    ),
    Query(
        OPERATOR,
        "Reconcile errors per second",
        "sum by (controller) (rate(controller_runtime_reconcile_errors_total[5m]))",
        ("controller",),
    ),
    Query(
        OPERATOR,
        "Reconcile time, P99",
        _p99("controller_runtime_reconcile_time_seconds", "controller"),
        ("controller",),
    ),
    Query(
        OPERATOR,
        "Busy workers",
        "sum by (controller) (controller_runtime_active_workers)",
        ("controller",),
    ),
    Query(OPERATOR, "Work-queue depth", "sum by (name) (workqueue_depth)", ("name",)),
    Query(
        OPERATOR,
        "Work-queue wait, P99",
        _p99("workqueue_queue_duration_seconds", "name"),
        ("name",),
    ),
    Query(
        OPERATOR,
        "Work-queue retries per second",
        "sum by (name) (rate(workqueue_retries_total[5m]))",
        ("name",),
    ),
    Query(
        OPERATOR,
        "API requests per second",
        "sum by (verb, code) (label_replace(rate(rest_client_requests_total[5m]), "
        '"verb", "$1", "method", "(.+)"))',
        ("verb", "code"),
    ),
    Query(
        OPERATOR,
        "API request time, P99",
        _p99("rest_client_request_duration_seconds", "verb"),
        ("verb",),
    ),
)

QUERIES: Final[tuple[Query, ...]] = (
    *_CLUSTER_QUERIES,
    *_JOB_QUERIES,
    *_SERVICE_QUERIES,
    *_OPERATOR_QUERIES,
)
"""Every panel of every board, in the order the boards show them (each board's single
numbers first, in one row)."""
