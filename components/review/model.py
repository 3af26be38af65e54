"""What a review says about one object, and about the whole change.

A ``Verdict`` is the one answer per changed ray.io/v1 object: a one-line summary, the
effects behind it (each naming the KubeRay behaviour it matches, as
``docs/conformance.md`` does), the pods created and deleted, the resources requested
before, after and at the peak of the change, and ``Finding``\\ s at a level. Each kind's
module (``raycluster.py``, ``rayservice.py``, ``rayjob.py``, ``raycronjob.py``) builds
verdicts from the operator's own functions; the formats only print them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Final, Literal

from operator_runtime.render.resources import Amount

__all__ = [
    "LEDGER_KEYS",
    "Finding",
    "Level",
    "Resources",
    "Verdict",
    "add_resources",
    "peak_resources",
]

Level = Literal["warn", "block"]
LEDGER_KEYS: Final = ("cpu", "gpu", "tpu", "memory")
"""The resources a ledger counts, as KubeRay's ``status.desired*`` do."""

Resources = Mapping[str, Amount]


@dataclass(frozen=True)
class Finding:
    """A rule's word on one object: ``rule`` is stable (a CI job may raise or lower its
    level by name), ``message`` names what changed and never a value."""

    rule: str
    level: Level
    ref: str
    message: str


@dataclass(frozen=True)
class Verdict:
    kind: str
    namespace: str
    name: str
    op: str
    summary: str
    """One line: what the operator does with the change."""
    effects: tuple[str, ...] = ()
    pods_before: int = 0
    pods_after: int = 0
    pods_created: int = 0
    pods_deleted: int = 0
    peak_pods: int = 0
    before: Resources = field(default_factory=dict)
    after: Resources = field(default_factory=dict)
    peak: Resources = field(default_factory=dict)
    lowest: Resources = field(default_factory=dict)
    """With the autoscaler, what the cluster holds at every group's ``minReplicas``
    after the change (empty without it)."""
    highest: Resources = field(default_factory=dict)
    """... and at every group's ``maxReplicas``."""
    peak_seconds: int | None = None
    """The peak lasts at least this long (a RayService upgrade: the old cluster lives
    ``rayClusterDeletionDelaySeconds`` past the switch); None when it has no lower bound."""
    changed: tuple[str, ...] = ()
    findings: tuple[Finding, ...] = ()
    known_at_deploy: bool = False
    """Part of the answer depends on a value the engine knows only at deploy."""
    origin: str = ""

    @property
    def ref(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


_ZERO: Final = Amount(Fraction(0), False)


def add_resources(*parts: Resources) -> dict[str, Amount]:
    """Per ledger key, the sum of ``parts`` (missing keys count as zero)."""
    totals = {}
    for key in LEDGER_KEYS:
        total = _ZERO
        for part in parts:
            value = part.get(key)
            if value is not None:
                total = value if total.value == 0 and not total.binary else total + value
        totals[key] = total
    return totals


def peak_resources(*parts: Resources) -> dict[str, Amount]:
    """Per ledger key, the largest of ``parts``."""
    peaks = {}
    for key in LEDGER_KEYS:
        values = [part[key] for part in parts if key in part]
        peaks[key] = max(values, key=lambda amount: amount.value) if values else _ZERO
    return peaks
