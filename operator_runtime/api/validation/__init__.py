"""Semantic validation of ray.io/v1 objects: the rules KubeRay v1.7 enforces in its
controllers and webhook, beyond what the CRD schema can say.

Each ``validate_*`` function raises the FIRST broken rule as an ``InvalidObjectError``
(metadata, then spec, then status), exactly as KubeRay reports one error and stops; the
controllers use them. The subclass (``InvalidMetadataError`` / ``InvalidSpecError`` /
``InvalidStatusError``) gives the event reason. A valid object returns None.

For a person at a keyboard (``render``, the components, the stack template) the same
rules are reported all at once: ``parse_object`` turns a raw document into its model or
raises every parse and Kubernetes-schema mistake in it (``_parse``, ``_k8sschema``);
``check_object`` raises every broken rule; ``load_object`` does both.

Rules implemented by the schema itself (enums, ``minimum``) are not repeated here: a
model that parsed already satisfies them.

The controllers do not run the Kubernetes-schema check of pod templates: what they read
has passed the API server, whose structural CRD schema already refuses wrong types and
bad quantities there and prunes (or, with strict field validation, refuses) unknown
fields; an invalid enum value, which the schema cannot express, fails the Pod create,
as it does under KubeRay, which copies the template into the Pod as it is.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Final

from pydantic import ValidationError

from operator_runtime.api.common import is_condition_true
from operator_runtime.api.errors import (
    ERROR_CLASSES,
    ErrorCode,
    ValidationScope,
    Violation,
)
from operator_runtime.api.features import FeatureGates
from operator_runtime.api.raycluster import SUSPENDED, SUSPENDING, RayCluster
from operator_runtime.api.raycronjob import RayCronJob
from operator_runtime.api.rayjob import RayJob
from operator_runtime.api.rayservice import RayService
from operator_runtime.api.validation import _names
from operator_runtime.api.validation._cluster import cluster_spec_violations
from operator_runtime.api.validation._cronjob import cronjob_violations
from operator_runtime.api.validation._job import job_spec_violations
from operator_runtime.api.validation._parse import (
    close_kind,
    embedded_violations,
    parse_violations,
)
from operator_runtime.api.validation._service import (
    service_spec_violations,
    timeout_annotation_violations,
)
from operator_runtime.api.validation._syntax import (
    is_dns1035_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    qualified_name_error,
)

__all__ = [
    "KINDS",
    "check_object",
    "is_dns1123_label",
    "is_dns1123_subdomain",
    "load_object",
    "parse_object",
    "qualified_name_error",
    "validate",
    "validate_raycluster",
    "validate_raycronjob",
    "validate_rayjob",
    "validate_rayservice",
]

RayObject = RayCluster | RayJob | RayService | RayCronJob
_Scoped = Iterable[tuple[ValidationScope, Iterator[Violation]]]
_Found = list[tuple[ValidationScope, Violation]]


KINDS: Final[Mapping[str, type[RayObject]]] = {
    "RayCluster": RayCluster,
    "RayJob": RayJob,
    "RayService": RayService,
    "RayCronJob": RayCronJob,
}


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


def _raise_all(found: _Found, kind: str, namespace: str, name: str) -> None:
    if not found:
        return
    unique = list(dict.fromkeys(v for _, v in found))
    raise ERROR_CLASSES[found[0][0]](
        unique[0], kind=kind, namespace=namespace, name=name, more=unique[1:]
    )


def _meta(document: Mapping[str, object]) -> tuple[str, str]:
    metadata = document.get("metadata")
    meta = metadata if isinstance(metadata, Mapping) else {}
    namespace, name = meta.get("namespace"), meta.get("name")
    return (
        namespace if isinstance(namespace, str) else "",
        name if isinstance(name, str) else "",
    )


def _parse(document: Mapping[str, object]) -> tuple[RayObject | None, _Found]:
    kind = document.get("kind")
    model = KINDS.get(kind) if isinstance(kind, str) else None
    if model is None:
        violation = Violation(
            ErrorCode.KIND_UNKNOWN,
            "kind",
            f"{kind!r} is not a ray.io/v1 kind",
            close_kind(str(kind), list(KINDS)),
        )
        return None, [(ValidationScope.SPEC, violation)]
    found = list(embedded_violations(model, document))
    parsed: RayObject | None = None
    try:
        parsed = model.model_validate(document)
    except ValidationError as error:
        found = parse_violations(model, error) + found
    found.sort(key=lambda v: not v.path.startswith("metadata"))
    scoped = [
        (ValidationScope.METADATA if v.path.startswith("metadata") else ValidationScope.SPEC, v)
        for v in found
    ]
    return parsed, scoped


def parse_object(document: Mapping[str, object]) -> RayObject:
    """The model of a raw ray.io/v1 document (wire or snake_case keys), or an
    ``InvalidObjectError`` with every parse and Kubernetes-schema mistake in it."""
    parsed, found = _parse(document)
    _raise_all(found, str(document.get("kind")), *_meta(document))
    assert parsed is not None
    return parsed


def check_object(obj: RayObject, gates: FeatureGates | None = None) -> None:
    """Raise every rule ``obj`` breaks, in one ``InvalidObjectError`` (see ``validate``)."""
    found = [(scope, v) for scope, violations in _rules(obj, gates) for v in violations]
    _raise_all(found, obj.kind, obj.metadata.namespace or "", obj.metadata.name or "")


def load_object(document: Mapping[str, object], gates: FeatureGates | None = None) -> RayObject:
    """The model of a raw document, or one ``InvalidObjectError`` with every mistake in
    it: parse, Kubernetes schema and, once it parses, KubeRay's rules."""
    parsed, found = _parse(document)
    if parsed is not None:
        found += [(scope, v) for scope, violations in _rules(parsed, gates) for v in violations]
    _raise_all(found, str(document.get("kind")), *_meta(document))
    assert parsed is not None
    return parsed


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
    _raise_first(cluster, _cluster_rules(cluster, gates or FeatureGates()))


def _cluster_rules(cluster: RayCluster, gates: FeatureGates) -> _Scoped:
    annotations = cluster.metadata.annotations or {}
    return (
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
    if is_condition_true(conditions, SUSPENDING) and is_condition_true(conditions, SUSPENDED):
        yield Violation(
            ErrorCode.RAYCLUSTER_SUSPENDING_AND_SUSPENDED,
            "status.conditions",
            "RayClusterSuspending and RayClusterSuspended are both True",
            "at most one of them may be True",
        )


def validate_rayjob(job: RayJob, gates: FeatureGates | None = None) -> None:
    """Raise the first rule ``job`` breaks (see the module docstring)."""
    _raise_first(job, _job_rules(job, gates or FeatureGates()))


def _job_rules(job: RayJob, gates: FeatureGates) -> _Scoped:
    annotations = job.metadata.annotations or {}
    return (
        (
            ValidationScope.METADATA,
            _name_violations(job.metadata.name, _names.MAX_RAYJOB_NAME, "RAYJOB"),
        ),
        (ValidationScope.SPEC, job_spec_violations(job.spec, annotations, gates, "spec")),
        (ValidationScope.STATUS, _job_status_violations(job)),
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
    _raise_first(service, _service_rules(service, gates or FeatureGates()))


def _service_rules(service: RayService, gates: FeatureGates) -> _Scoped:
    annotations = service.metadata.annotations or {}
    name_rules = _name_violations(service.metadata.name, _names.MAX_RAYSERVICE_NAME, "RAYSERVICE")
    return (
        (ValidationScope.METADATA, name_rules),
        (ValidationScope.METADATA, timeout_annotation_violations(annotations)),
        (ValidationScope.SPEC, service_spec_violations(service.spec, annotations, gates)),
    )


def validate_raycronjob(cron: RayCronJob, gates: FeatureGates | None = None) -> None:
    """Raise the first rule ``cron`` breaks. KubeRay reports all of them, the name too,
    as InvalidRayCronJobSpec, so every error here is an ``InvalidSpecError``."""
    _raise_first(cron, _cronjob_rules(cron, gates or FeatureGates()))


def _cronjob_rules(cron: RayCronJob, gates: FeatureGates) -> _Scoped:
    return ((ValidationScope.SPEC, cronjob_violations(cron, gates)),)


def _rules(obj: RayObject, gates: FeatureGates | None) -> _Scoped:
    gates = gates or FeatureGates()
    if isinstance(obj, RayCluster):
        return _cluster_rules(obj, gates)
    if isinstance(obj, RayJob):
        return _job_rules(obj, gates)
    if isinstance(obj, RayService):
        return _service_rules(obj, gates)
    return _cronjob_rules(obj, gates)


def validate(obj: RayObject, gates: FeatureGates | None = None) -> None:
    """Validate any of the four kinds: raise the first rule it breaks."""
    _raise_first(obj, _rules(obj, gates))
