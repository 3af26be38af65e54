"""The policy pack's organisation rules as review findings: one rule, one home.

With ``--policy-config FILE`` (the file ``pulumi preview --policy-pack-config`` takes),
the review runs the pack's own checks (``components.policy.rules.ORGANISATION_CHECKS``,
the table the pack serves) over every object a change creates, updates or replaces, so
a comment and a SARIF log carry the violations the pack would fail the preview with.
A policy's level follows the file as the pack's does (``mandatory`` is ``block``,
``advisory`` ``warn``, ``disabled`` off) unless ``--level`` sets it.

``ray-api-validation`` is not run again: the verdicts already load every object with
the same ``load_object`` and report what it refuses as ``invalid-object``. A violation
at a path whose value is known only at deploy, or is a secret, is not reported (the
pack skips such values too). A finding prints the violation's path, its fix and its
code, never the "what": that may quote a value of the spec (an image, say).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from ..policy.rules import ORGANISATION_CHECKS, Violation
from ..rendering import InputError
from .changes import ObjectChange
from .report import Report
from .rules import ReviewSettings, RuleLevel

__all__ = ["POLICY_LEVELS", "PolicyConfig", "parse_policy_config", "with_policies"]

POLICY_LEVELS: Final[Mapping[str, RuleLevel]] = {
    "mandatory": "block",
    "advisory": "warn",
    "disabled": "off",
}
"""The pack's enforcement levels as the review's."""


@dataclasses.dataclass(frozen=True)
class PolicyConfig:
    """Each policy's config and the level its file gives it (none: the pack's default)."""

    configs: Mapping[str, Mapping[str, Any]]
    levels: Mapping[str, RuleLevel]


def parse_policy_config(text: str, *, source: str) -> PolicyConfig:
    """The pack's config file: per policy, an enforcement level, or an object of config
    values with an optional ``enforcementLevel``. Raises ``InputError``."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise InputError(f"{source}: not JSON: {error}") from None
    if not isinstance(document, dict):
        raise InputError(f"{source}: give an object of policy names")
    known = {check.name for check in ORGANISATION_CHECKS} | {"ray-api-validation"}
    configs: dict[str, Mapping[str, Any]] = {}
    levels: dict[str, RuleLevel] = {}
    for name, entry in document.items():
        if name not in known:
            raise InputError(f"{source}: {name!r} is none of the pack's policies")
        if isinstance(entry, dict):
            level = entry.get("enforcementLevel")
            configs[name] = {k: v for k, v in entry.items() if k != "enforcementLevel"}
        else:
            level = entry
        if level is not None:
            if level not in POLICY_LEVELS:
                raise InputError(
                    f"{source}: {name}: enforcementLevel {level!r}; give one of "
                    f"{', '.join(POLICY_LEVELS)}"
                )
            levels[name] = POLICY_LEVELS[level]
    return PolicyConfig(configs, levels)


def with_policies(
    report: Report,
    changes: Sequence[ObjectChange],
    config: PolicyConfig,
    settings: ReviewSettings,
) -> Report:
    """``report`` with a finding for each violation of the pack's organisation rules by
    an object the change leaves in place (created, updated or replaced)."""
    settings = dataclasses.replace(settings, levels={**config.levels, **settings.levels})
    found: dict[str, list[tuple[str, Violation]]] = {}
    for change in changes:
        if change.after is None:
            continue
        hidden = (*change.unknown, *change.secret)
        for check in ORGANISATION_CHECKS:
            if settings.is_off(check.name):
                continue
            for line in check.judge(change.after, config.configs.get(check.name, {})):
                if isinstance(line, Violation) and not _under(line.path, hidden):
                    found.setdefault(change.ref, []).append((check.name, line))
    if not found:
        return report
    verdicts = []
    for verdict in report.verdicts:
        extra = tuple(
            settings.finding(rule, verdict.ref, f"{line.path}: {line.hint} [{line.code}]")
            for rule, line in found.get(verdict.ref, ())
        )
        verdicts.append(
            dataclasses.replace(verdict, findings=(*verdict.findings, *extra)) if extra else verdict
        )
    return Report(tuple(verdicts), report.source)


def _under(path: str, hidden: Sequence[str]) -> bool:
    return any(path == h or path.startswith((h + ".", h + "[")) for h in hidden)
