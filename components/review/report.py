"""A review of a whole change: one verdict per changed ray.io/v1 object, and totals.

``review`` hands each change to its kind's verdict function (``VERDICTS``: all four
ray.io/v1 kinds); a kind without one gets a verdict that says so (a
``not-yet-reviewed`` finding), never a guess.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from operator_runtime.render.resources import Amount

from .changes import ObjectChange
from .model import Finding, Verdict, add_resources
from .raycluster import raycluster_verdict
from .raycronjob import raycronjob_verdict
from .rayjob import rayjob_verdict
from .rayservice import rayservice_verdict
from .rules import ReviewSettings

__all__ = ["VERDICTS", "Report", "review"]

VERDICTS: Final[Mapping[str, Callable[[ObjectChange, ReviewSettings], Verdict]]] = {
    "RayCluster": raycluster_verdict,
    "RayService": rayservice_verdict,
    "RayJob": rayjob_verdict,
    "RayCronJob": raycronjob_verdict,
}


@dataclass(frozen=True)
class Report:
    verdicts: tuple[Verdict, ...]
    source: str = ""

    @property
    def findings(self) -> tuple[Finding, ...]:
        ordered = [f for v in self.verdicts for f in v.findings]
        return tuple(sorted(ordered, key=lambda f: (f.level != "block", f.rule, f.ref)))

    @property
    def blocked(self) -> bool:
        return any(f.level == "block" for f in self.findings)

    def total(self, side: str) -> dict[str, Amount]:
        """``before``, ``after`` or ``peak`` summed over every object (the peaks of
        different objects are added: a CI job applies them in one ``pulumi up``)."""
        return add_resources(*(getattr(v, side) for v in self.verdicts))

    def pods(self, field_name: str) -> int:
        return sum(int(getattr(v, field_name)) for v in self.verdicts)


def review(
    changes: Sequence[ObjectChange], settings: ReviewSettings, *, source: str = ""
) -> Report:
    verdicts = []
    for change in changes:
        judge = VERDICTS.get(change.kind)
        verdict = judge(change, settings) if judge else _not_reviewed(change, settings)
        verdicts.append(settings.kept(verdict))
    return Report(tuple(verdicts), source)


def _not_reviewed(change: ObjectChange, settings: ReviewSettings) -> Verdict:
    finding = settings.finding(
        "not-yet-reviewed", change.ref, f"{change.op}: the review has no {change.kind} verdict yet"
    )
    return Verdict(
        kind=change.kind,
        namespace=change.namespace,
        name=change.name,
        op=change.op,
        summary=f"{change.op}; not analysed yet ({len(change.changed)} field(s) change)",
        changed=change.changed,
        findings=(finding,),
        origin=change.origin,
    )
