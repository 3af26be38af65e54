"""Prometheus Operator objects for the operator: a ServiceMonitor and the alert rules.

The alerts watch the ``kuberay_*`` metrics KubeRay defines and our operator exposes under
the same names, with the thresholds of the observability design notes (section 9.3):
a cluster stuck provisioning or slow to provision, a failed or overlong RayJob, a
RayService not ready or stuck upgrading. Each alert is data, so a test can read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal

import pulumi
import pulumi_kubernetes as k8s

from .args import Plan
from .deployment import METRICS_LABELS

__all__ = [
    "ALERTS",
    "MONITORING_API_VERSION",
    "Alert",
    "create_prometheus_rule",
    "create_service_monitor",
    "rule_groups",
]

MONITORING_API_VERSION: Final = "monitoring.coreos.com/v1"
SCRAPE_INTERVAL: Final = "30s"
"""Each scrape lists the cached Ray objects; 30 s is the usual production trade-off."""


@dataclass(frozen=True)
class Alert:
    name: str
    expr: str
    severity: Literal["warning", "critical"]
    summary: str
    description: str
    pending: str | None = None
    """How long ``expr`` must hold before the alert fires (the rule's ``for``)."""


_WHERE: Final = "{{ $labels.namespace }}/{{ $labels.name }}"

ALERTS: Final[tuple[Alert, ...]] = (
    Alert(
        "RayClusterProvisioningStuck",
        'kuberay_cluster_condition_provisioned{condition="false"} == 1',
        "warning",
        f"RayCluster {_WHERE} has not finished provisioning for 15 minutes",
        "Its pods are not all up yet. Look at the head pod's events, the namespace's "
        "resource quota and whether the nodes have room for the requested resources.",
        pending="15m",
    ),
    Alert(
        "RayClusterSlowProvisioning",
        "kuberay_cluster_provisioned_duration_seconds > 600",
        "warning",
        f"RayCluster {_WHERE} took more than 10 minutes to provision",
        "It took {{ $value }} s. Slow scheduling (autoscaling nodes) or slow image pulls "
        "are the usual causes.",
    ),
    Alert(
        "RayJobFailed",
        'kuberay_job_deployment_status{deployment_status="Failed"} == 1',
        "critical",
        f"RayJob {_WHERE} failed",
        "The RayJob's events and its submitter's logs say why.",
    ),
    # The notes' expression, kuberay_job_execution_duration_seconds{job_deployment_status
    # !~"Complete|Failed"} > 3600, can never see a running job: KubeRay (and we) record
    # that duration only when a run ends (Complete, Failed, or Retrying), so it matched
    # only a failed attempt that is retried. A RayJob Running for an hour is what it means.
    Alert(
        "RayJobExecutionTimeout",
        'kuberay_job_deployment_status{deployment_status="Running"} == 1',
        "warning",
        f"RayJob {_WHERE} has been running for more than an hour",
        "It has been Running for an hour without finishing: check it is not deadlocked or "
        "waiting for resources it cannot get.",
        pending="1h",
    ),
    Alert(
        "RayServiceNotReady",
        'kuberay_service_condition_ready{condition="false"} == 1',
        "critical",
        f"RayService {_WHERE} has not been ready for 10 minutes",
        "Check its RayCluster and the status of its Serve applications.",
        pending="10m",
    ),
    Alert(
        "RayServiceUpgradeStuck",
        'kuberay_service_condition_upgrade_in_progress{condition="true"} == 1',
        "warning",
        f"RayService {_WHERE} has been upgrading for more than 30 minutes",
        "The zero-downtime upgrade waits for the new RayCluster: check that it provisions "
        "and that its Serve applications become healthy.",
        pending="30m",
    ),
)


def rule_groups(group_name: str) -> list[dict[str, Any]]:
    """The PrometheusRule's ``spec.groups``."""
    rules: list[dict[str, Any]] = []
    for alert in ALERTS:
        rule: dict[str, Any] = {"alert": alert.name, "expr": alert.expr}
        if alert.pending is not None:
            rule["for"] = alert.pending
        rule["labels"] = {"severity": alert.severity}
        rule["annotations"] = {"summary": alert.summary, "description": alert.description}
        rules.append(rule)
    return [{"name": group_name, "rules": rules}]


def create_service_monitor(
    parent: pulumi.Resource, plan: Plan, namespace: pulumi.Input[str]
) -> k8s.apiextensions.CustomResource:
    spec = {
        "selector": {"matchLabels": {**plan.selector_labels, **METRICS_LABELS}},
        "namespaceSelector": {"matchNames": [namespace]},
        "endpoints": [
            {
                "port": "metrics",
                "path": "/metrics",
                "interval": plan.service_monitor_interval,
                "scrapeTimeout": "10s",
                # The Ray metrics carry the namespace and name of the Ray object; without
                # this Prometheus renames them and puts the operator's namespace in their
                # place, and every alert would name the wrong object.
                "honorLabels": True,
            }
        ],
    }
    return k8s.apiextensions.CustomResource(
        plan.resource_name,
        api_version=MONITORING_API_VERSION,
        kind="ServiceMonitor",
        # In the operator's namespace unless told: a Prometheus that reads only its own
        # namespace's ServiceMonitors gets it there, still selecting the operator's.
        metadata=plan.metadata(
            plan.base_name, plan.service_monitor_namespace or namespace, plan.monitoring_labels
        ),
        spec=spec,
        opts=plan.child(parent),
    )


def create_prometheus_rule(
    parent: pulumi.Resource, plan: Plan, namespace: pulumi.Input[str]
) -> k8s.apiextensions.CustomResource:
    return k8s.apiextensions.CustomResource(
        plan.resource_name,
        api_version=MONITORING_API_VERSION,
        kind="PrometheusRule",
        metadata=plan.metadata(plan.base_name, namespace, plan.monitoring_labels),
        spec={"groups": rule_groups(f"{plan.base_name}.rules")},
        opts=plan.child(parent),
    )
