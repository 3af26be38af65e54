"""Semantic validation of ray.io/v1 objects: the rules KubeRay v1.7 enforces in its
controllers and webhook, beyond what the CRD schema can say.

Each ``validate_*`` function raises the FIRST broken rule as an ``InvalidObjectError``
(metadata, then spec, then status), exactly as KubeRay reports one error and stops.
The subclass (``InvalidMetadataError`` / ``InvalidSpecError`` / ``InvalidStatusError``)
gives the event reason. A valid object returns None.

Rules implemented by the schema itself (enums, ``minimum``) are not repeated here: a
model that parsed already satisfies them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from operator_runtime.api.common import is_condition_true
from operator_runtime.api.errors import (
    ERROR_CLASSES,
    ErrorCode,
    ValidationScope,
    Violation,
)
from operator_runtime.api.features import FeatureGates
from operator_runtime.api.raycluster import RayCluster
from operator_runtime.api.raycronjob import RayCronJob
from operator_runtime.api.rayjob import RayJob
from operator_runtime.api.rayservice import RayService
from operator_runtime.api.validation import _names
from operator_runtime.api.validation._cluster import cluster_spec_violations
from operator_runtime.api.validation._cronjob import cronjob_violations
from operator_runtime.api.validation._job import job_spec_violations
from operator_runtime.api.validation._service import (
    service_spec_violations,
    timeout_annotation_violations,
)
from operator_runtime.api.validation._syntax import is_dns1035_label

__all__ = [
    "validate",
    "validate_raycluster",
    "validate_raycronjob",
    "validate_rayjob",
    "validate_rayservice",
]

RayObject = RayCluster | RayJob | RayService | RayCronJob
_Scoped = Iterable[tuple[ValidationScope, Iterator[Violation]]]


def _raise_first(obj: RayObject, scoped: _Scoped) -> None:
    for scope, violations in scoped:
        first = next(violations, None)
        if first is not None:
            raise ERROR_CLASSES[scope](
                first,
                kind=obj.kind,
                namespace=obj.metadata.namespace or "",
                name=obj.metadata.name or "",
            )


def _name_violations(name: str | None, limit: int, prefix: str) -> Iterator[Violation]:
    name = name or ""
    if len(name) > limit:
        yield Violation(
            ErrorCode[f"{prefix}_NAME_TOO_LONG"],
            "metadata.name",
            f"the name has {len(name)} characters",
            f"use at most {limit} so generated child names stay valid",
        )
    if not is_dns1035_label(name):
        yield Violation(
            ErrorCode[f"{prefix}_NAME_NOT_DNS1035"],
            "metadata.name",
            f"{name!r} is not a DNS-1035 label",
            "use lowercase letters, digits and '-', starting with a letter",
        )


def validate_raycluster(cluster: RayCluster, gates: FeatureGates | None = None) -> None:
    """Raise the first rule ``cluster`` breaks (see the module docstring)."""
    gates = gates or FeatureGates()
    annotations = cluster.metadata.annotations or {}
    _raise_first(
        cluster,
        (
            (
                ValidationScope.METADATA,
                _name_violations(cluster.metadata.name, _names.MAX_RAYCLUSTER_NAME, "RAYCLUSTER"),
            ),
            (
                ValidationScope.SPEC,
                cluster_spec_violations(cluster.spec, annotations, gates, "spec"),
            ),
            (ValidationScope.SPEC, _upgrade_strategy_violations(cluster)),
            (ValidationScope.STATUS, _cluster_status_violations(cluster)),
        ),
    )


def _upgrade_strategy_violations(cluster: RayCluster) -> Iterator[Violation]:
    strategy = cluster.spec.upgrade_strategy
    creator = (cluster.metadata.labels or {}).get(_names.ORIGINATED_FROM_CRD_LABEL)
    if strategy is not None and strategy.type is not None and creator in ("RayJob", "RayService"):
        yield Violation(
            ErrorCode.RAYCLUSTER_UPGRADE_STRATEGY_ON_CHILD,
            "spec.upgradeStrategy.type",
            f"upgradeStrategy cannot be set on a cluster created by a {creator}",
            f"remove upgradeStrategy; the {creator} manages upgrades",
        )


def _cluster_status_violations(cluster: RayCluster) -> Iterator[Violation]:
    conditions = cluster.status.conditions if cluster.status else None
    if is_condition_true(conditions, "RayClusterSuspending") and is_condition_true(
        conditions, "RayClusterSuspended"
    ):
        yield Violation(
            ErrorCode.RAYCLUSTER_SUSPENDING_AND_SUSPENDED,
            "status.conditions",
            "RayClusterSuspending and RayClusterSuspended are both True",
            "at most one of them may be True",
        )


def validate_rayjob(job: RayJob, gates: FeatureGates | None = None) -> None:
    """Raise the first rule ``job`` breaks (see the module docstring)."""
    gates = gates or FeatureGates()
    annotations = job.metadata.annotations or {}
    _raise_first(
        job,
        (
            (
                ValidationScope.METADATA,
                _name_violations(job.metadata.name, _names.MAX_RAYJOB_NAME, "RAYJOB"),
            ),
            (ValidationScope.SPEC, job_spec_violations(job.spec, annotations, gates, "spec")),
            (ValidationScope.STATUS, _job_status_violations(job)),
        ),
    )


def _job_status_violations(job: RayJob) -> Iterator[Violation]:
    status = job.status
    if (
        status is not None
        and status.job_deployment_status == "Waiting"
        and job.spec.submission_mode != "InteractiveMode"
    ):
        yield Violation(
            ErrorCode.RAYJOB_WAITING_NOT_INTERACTIVE,
            "status.jobDeploymentStatus",
            f"Waiting is only used in InteractiveMode, not {job.spec.submission_mode}",
            "only InteractiveMode RayJobs wait for a job ID",
        )


def validate_rayservice(service: RayService, gates: FeatureGates | None = None) -> None:
    """Raise the first rule ``service`` breaks (see the module docstring)."""
    gates = gates or FeatureGates()
    annotations = service.metadata.annotations or {}
    name_rules = _name_violations(service.metadata.name, _names.MAX_RAYSERVICE_NAME, "RAYSERVICE")
    _raise_first(
        service,
        (
            (ValidationScope.METADATA, name_rules),
            (ValidationScope.METADATA, timeout_annotation_violations(annotations)),
            (ValidationScope.SPEC, service_spec_violations(service.spec, annotations, gates)),
        ),
    )


def validate_raycronjob(cron: RayCronJob, gates: FeatureGates | None = None) -> None:
    """Raise the first rule ``cron`` breaks. KubeRay reports all of them, the name too,
    as InvalidRayCronJobSpec, so every error here is an ``InvalidSpecError``."""
    _raise_first(cron, ((ValidationScope.SPEC, cronjob_violations(cron, gates or FeatureGates())),))


def validate(obj: RayObject, gates: FeatureGates | None = None) -> None:
    """Validate any of the four kinds."""
    if isinstance(obj, RayCluster):
        validate_raycluster(obj, gates)
    elif isinstance(obj, RayJob):
        validate_rayjob(obj, gates)
    elif isinstance(obj, RayService):
        validate_rayservice(obj, gates)
    else:
        validate_raycronjob(obj, gates)
