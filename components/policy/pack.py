"""The CrossGuard glue: the rules of ``rules`` as ``pulumi_policy`` resource policies.

Only this module imports ``pulumi_policy``: it runs in the policy pack's own virtualenv
(``policy/requirements.txt``), which pins protobuf 5 as pulumi-policy requires, while the
project's test environment is on protobuf 6; the rules themselves are tested without it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    PolicyPack,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
)
from pulumi_policy.proxy import UnknownValueError

from . import rules

PACK_NAME = "pulumi-ray"

RAY_TYPES = frozenset(
    f"kubernetes:ray.io/v1:{kind}" for kind in ("RayCluster", "RayJob", "RayService", "RayCronJob")
)
"""Whatever created them (yaml/v2, CustomResource, Helm, our components), Ray objects
reach the engine as these types."""

Rule = Callable[[Mapping[str, object], Mapping[str, Any]], Sequence[str]]


def _plain(value: object) -> tuple[object, bool]:
    """``value`` as plain dicts and lists, and whether any part of it is unknown (preview).

    pulumi_policy hands the inputs over as proxies that raise on an unknown value; a
    rule must not mistake an unknown for a missing field, so the caller sees the flag.
    """
    if isinstance(value, Mapping):
        result: dict[str, object] = {}
        unknown = False
        for key in list(value.keys()):
            try:
                item = value[key]
            except UnknownValueError:
                unknown = True
                continue
            result[key], inner = _plain(item)
            unknown = unknown or inner
        return result, unknown
    if isinstance(value, list | tuple) or type(value).__name__ == "_ListProxy":
        items: list[object] = []
        unknown = False
        for index in range(len(value)):  # type: ignore[arg-type]
            try:
                item = value[index]  # type: ignore[index]
            except UnknownValueError:
                unknown = True
                continue
            plain, inner = _plain(item)
            items.append(plain)
            unknown = unknown or inner
        return items, unknown
    return value, False


def _policy(
    name: str,
    description: str,
    rule: Rule,
    *,
    schema: PolicyConfigSchema | None = None,
    skip_unknown: bool = False,
) -> ResourceValidationPolicy:
    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        if args.resource_type not in RAY_TYPES:
            return
        document, unknown = _plain(args.props)
        if unknown and skip_unknown:
            # A value computed by another resource: the operator validates it at reconcile.
            return
        assert isinstance(document, dict)
        for line in rule(document, args.get_config()):
            report_violation(str(line), None)  # a plain str for the engine's protobuf

    return ResourceValidationPolicy(
        name=name,
        description=description,
        validate=validate,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=schema,
    )


def _count(description: str) -> dict[str, Any]:
    return {"type": "integer", "minimum": 0, "description": description}


_SCHEMAS: dict[str, PolicyConfigSchema] = {
    "ray-api-validation": PolicyConfigSchema(
        {
            "featureGates": {
                "type": "string",
                "description": "The operator's --feature-gates, e.g. RayCronJob=true.",
            },
        }
    ),
    "ray-image-allow-list": PolicyConfigSchema(
        {
            "allowedPrefixes": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Image prefixes allowed; empty allows every image.",
            },
        }
    ),
    "ray-gpu-caps": PolicyConfigSchema(
        {
            "maxPerGroup": _count("GPUs one worker group may take at its largest."),
            "maxPerCluster": _count("GPUs one cluster may take at its largest."),
        }
    ),
    "ray-resource-limits": PolicyConfigSchema(
        {
            "resources": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Limits every container must set (default cpu, memory).",
            },
        }
    ),
}
"""Each policy's config as the engine validates it; what the config means is the
check's own (``rules.CHECKS``)."""


def policies() -> list[ResourceValidationPolicy]:
    """The pack's policies, every one mandatory unless the pack's config says otherwise."""
    return [
        _policy(
            check.name,
            check.description,
            check.judge,
            schema=_SCHEMAS.get(check.name),
            skip_unknown=check is rules.API_CHECK,
        )
        for check in rules.CHECKS
    ]


def serve() -> None:
    """Start the analyzer: prints its port and serves the engine until it is stopped."""
    PolicyPack(name=PACK_NAME, policies=list(policies()))
