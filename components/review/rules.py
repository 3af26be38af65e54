"""The review's rules: each a stable name, a default level and what it guards against.

A CI job raises, lowers or turns off a rule by name (``--level
recreate-restarts-cluster=block``, ``--level template-not-rolled=off``); a ``block``
finding makes the review exit 1, so the job fails before merge.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Final, Literal

from operator_runtime.render import RenderOptions

from ..policy.rules import ORGANISATION_CHECKS
from .model import Finding, Level, Verdict

__all__ = ["RULES", "ReviewSettings", "RuleLevel", "parse_level"]

RuleLevel = Literal["warn", "block", "off"]
_RULE_LEVELS: Final[Mapping[str, RuleLevel]] = {"warn": "warn", "block": "block", "off": "off"}

RULES: Final[Mapping[str, tuple[Level, str]]] = {
    "invalid-object": ("block", "the operator would refuse the object"),
    "recreate-restarts-cluster": (
        "warn",
        "upgradeStrategy Recreate and a pod-template change: every pod is deleted",
    ),
    "template-not-rolled": (
        "warn",
        "a pod-template change that running pods never get (no Recreate strategy)",
    ),
    "suspend-deletes-pods": ("warn", "suspending a cluster or a worker group deletes its pods"),
    "removed-group-pods-remain": (
        "warn",
        "a removed worker group's pods keep running: the operator manages only the groups "
        "in the spec",
    ),
    "cluster-deleted": ("warn", "a cluster with pods is deleted"),
    "gcs-ft-deletion-waits": (
        "warn",
        "a GCS fault-tolerant cluster's deletion waits for its Redis cleanup Job",
    ),
    "replaced-restarts-cluster": ("warn", "Pulumi replaces the object: every pod is recreated"),
    "upgrade-starts-new-cluster": (
        "warn",
        "a RayService cluster change starts a second cluster beside the old one until the switch",
    ),
    "change-not-applied": (
        "warn",
        "a change the operator will not apply to what runs (a RayService's upgradeStrategy "
        "None or a field its hash leaves out, a running RayJob's spec)",
    ),
    "job-runs-again": ("warn", "a RayJob runs again: a new run on a new cluster"),
    "raycronjob-gate-off": (
        "warn",
        "the RayCronJob controller runs only with the RayCronJob feature gate on",
    ),
    "known-at-deploy": ("warn", "part of the verdict depends on a value known only at deploy"),
    "not-yet-reviewed": ("warn", "the review has no verdict for this kind yet"),
    "quota-exceeded": (
        "block",
        "what the change's Ray objects request at its peak (both clusters of an upgrade) "
        "exceeds the --quota given",
    ),
    # The policy pack's organisation rules, run with --policy-config (``policies``).
    **{check.name: ("block", check.description) for check in ORGANISATION_CHECKS},
}


@dataclass(frozen=True)
class ReviewSettings:
    """How the operator under review is configured, and the rule levels a job chose."""

    options: RenderOptions = field(default_factory=RenderOptions)
    random_pod_delete: bool = False
    """``ENABLE_RANDOM_POD_DELETE``: the operator scales autoscaled groups down too."""
    gcs_ft_redis_cleanup: bool = True
    """``ENABLE_GCS_FT_REDIS_CLEANUP``: deleting a Redis GCS FT cluster waits for cleanup."""
    zero_downtime: bool = True
    """``ENABLE_ZERO_DOWNTIME``: false makes a RayService without an upgradeStrategy ignore
    a cluster change."""
    levels: Mapping[str, RuleLevel] = field(default_factory=dict)

    def finding(self, rule: str, ref: str, message: str) -> Finding:
        level = self.levels.get(rule, RULES[rule][0])
        # A rule turned off still gives its finding here; ``kept`` drops it, so a verdict
        # module never has to ask.
        return Finding(
            rule=rule, level=RULES[rule][0] if level == "off" else level, ref=ref, message=message
        )

    def is_off(self, rule: str) -> bool:
        return self.levels.get(rule) == "off"

    def kept(self, verdict: Verdict) -> Verdict:
        """``verdict`` without the findings of the rules turned off."""
        findings = tuple(f for f in verdict.findings if not self.is_off(f.rule))
        return verdict if findings == verdict.findings else replace(verdict, findings=findings)


def parse_level(text: str) -> tuple[str, RuleLevel]:
    """``RULE=warn|block|off`` -> (rule, level); raises ``ValueError`` naming the choices."""
    rule, _, level = text.partition("=")
    if rule not in RULES:
        raise ValueError(f"unknown rule {rule!r}; the rules are {', '.join(sorted(RULES))}")
    if level in _RULE_LEVELS:
        return rule, _RULE_LEVELS[level]
    raise ValueError(f"{text!r}: give RULE=warn, RULE=block or RULE=off")
