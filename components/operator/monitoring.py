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
    "RUNBOOK_DOC",
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
    runbook: str
    """What to do when it fires, in steps a person on call can follow from the alert
    alone (``{{ $labels.* }}`` filled in); the longer version is docs/observability.md,
    under a heading named after the alert."""
    pending: str | None = None
    """How long ``expr`` must hold before the alert fires (the rule's ``for``)."""

    @property
    def anchor(self) -> str:
        """The heading of docs/observability.md that explains this alert."""
        return self.name.lower()


_WHERE: Final = "{{ $labels.namespace }}/{{ $labels.name }}"
_KUBECTL: Final = "kubectl -n {{ $labels.namespace }}"
RUNBOOK_DOC: Final = "docs/observability.md"
"""Where each alert's longer runbook is, under a heading named after it."""

ALERTS: Final[tuple[Alert, ...]] = (
    Alert(
        "RayClusterProvisioningStuck",
        'kuberay_cluster_condition_provisioned{condition="false"} == 1',
        "warning",
        f"RayCluster {_WHERE} has not finished provisioning for 15 minutes",
        "Its pods are not all up yet. Look at the head pod's events, the namespace's "
        "resource quota and whether the nodes have room for the requested resources.",
        runbook=(
            f"1. `{_KUBECTL} describe raycluster {{{{ $labels.name }}}}`: Warning events "
            "(FailedToCreateHeadPod, FailedToCreateWorkerPod) name a refused pod, often a "
            f"quota. 2. `{_KUBECTL} get pods -l ray.io/cluster={{{{ $labels.name }}}}`: "
            "Pending means no node fits (describe the pod: resources, taints, selectors); "
            "ImagePullBackOff a wrong image or pull secret; Running but not Ready a Ray "
            "process that does not start (the pod's logs; a worker waits in its "
            "wait-gcs-ready init container until the head is up). 3. The operator's logs "
            "for the cluster's name."
        ),
        pending="15m",
    ),
    Alert(
        "RayClusterSlowProvisioning",
        "kuberay_cluster_provisioned_duration_seconds > 600",
        "warning",
        f"RayCluster {_WHERE} took more than 10 minutes to provision",
        "It took {{ $value }} s. Slow scheduling (autoscaling nodes) or slow image pulls "
        "are the usual causes.",
        runbook=(
            "The cluster is up; this records how long it took, and stays firing while the "
            "cluster exists. Look at its pods' events "
            f"(`{_KUBECTL} get events --field-selector involvedObject.kind=Pod`): long gaps "
            "between Scheduled and Pulled are image pulls (a smaller image, or one cached "
            "on the nodes), a long wait before Scheduled is the node autoscaler "
            "(a warm node pool, or smaller pods)."
        ),
    ),
    Alert(
        "RayJobFailed",
        'kuberay_job_deployment_status{deployment_status="Failed"} == 1',
        "critical",
        f"RayJob {_WHERE} failed",
        "The RayJob's events and its submitter's logs say why.",
        runbook=(
            f"1. `{_KUBECTL} get rayjob {{{{ $labels.name }}}} -o yaml`: status.reason says "
            "which failure (AppFailed: the program failed; SubmissionFailed: the submitter "
            "could not submit; DeadlineExceeded/PreRunningDeadlineExceeded: a deadline "
            "passed; ValidationFailed: the spec is refused, status.message says why). "
            f"2. `{_KUBECTL} logs job/{{{{ $labels.name }}}}`: the submitter's output, the "
            "program's own log. 3. `kubectl describe` the RayJob for its events. It fires "
            "until the RayJob is deleted."
        ),
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
        runbook=(
            f"1. `{_KUBECTL} get rayjob {{{{ $labels.name }}}} -o yaml`: status.startTime and "
            "the cluster it runs on (status.rayClusterName). 2. The Ray dashboard of that "
            "cluster: tasks pending for resources no node has, or tasks that never finish, "
            "show where it hangs; the job's log (the submitter's output, "
            f"`{_KUBECTL} logs job/{{{{ $labels.name }}}}`) shows its last progress. 3. Set "
            "spec.activeDeadlineSeconds so a stuck run ends on its own (it then fails with "
            "DeadlineExceeded and RayJobFailed fires); a job that takes longer than an hour "
            "by design fires this every run: silence it for that job."
        ),
        pending="1h",
    ),
    Alert(
        "RayServiceNotReady",
        'kuberay_service_condition_ready{condition="false"} == 1',
        "critical",
        f"RayService {_WHERE} has not been ready for 10 minutes",
        "Check its RayCluster and the status of its Serve applications.",
        runbook=(
            f"1. `{_KUBECTL} describe rayservice {{{{ $labels.name }}}}`: the conditions and "
            "events, and status.activeServiceStatus / pendingServiceStatus: the Serve "
            "applications' status and message (a DEPLOY_FAILED application names the "
            "error). 2. The RayCluster it points at: is it provisioned (the RayClusters "
            "board)? 3. The head pod's Serve logs (/tmp/ray/session_latest/logs/serve/) or "
            "the Ray dashboard's Serve page."
        ),
        pending="10m",
    ),
    Alert(
        "RayServiceUpgradeStuck",
        'kuberay_service_condition_upgrade_in_progress{condition="true"} == 1',
        "warning",
        f"RayService {_WHERE} has been upgrading for more than 30 minutes",
        "The zero-downtime upgrade waits for the new RayCluster: check that it provisions "
        "and that its Serve applications become healthy.",
        runbook=(
            "Traffic still goes to the old cluster. 1. status.pendingServiceStatus names the "
            "new RayCluster: is it provisioned (the RayClusters board, "
            "RayClusterProvisioningStuck)? 2. Its Serve applications' status in "
            f"`{_KUBECTL} get rayservice {{{{ $labels.name }}}} -o yaml`. 3. A new config that "
            "can never deploy keeps the upgrade waiting: fix the spec, or restore the "
            "previous one to end it."
        ),
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
        rule["annotations"] = {
            "summary": alert.summary,
            "description": alert.description,
            "runbook": f"{alert.runbook} More: {RUNBOOK_DOC}#{alert.anchor}",
        }
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
