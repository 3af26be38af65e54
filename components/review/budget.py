"""What a change may hold and what it costs: a quota for its peak, and prices per hour.

Both come from the user (``--quota cpu=64,memory=256Gi,gpu=8``, ``--price
cpu=0.03/h,gpu=2.5/h,memory=0.004/GiB-h``); nothing is fetched. The quota is held
against the change's peak as the report totals it: every changed object's peak added
(one ``pulumi up`` applies them together), and a RayService upgrade's peak is both of
its clusters side by side, as its verdict counts it. Pods of other workloads in the
namespaces are not counted: the review knows only the objects the change touches.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Final

from operator_runtime.render.resources import Amount, amount, format_quantity

from .model import LEDGER_KEYS, Resources, Verdict
from .report import Report
from .rules import ReviewSettings

__all__ = ["Prices", "parse_prices", "parse_quota", "with_quota"]

_GIB: Final = Fraction(2**30)
_PRICE_UNITS: Final[Mapping[str, tuple[str, ...]]] = {
    "cpu": ("/h", ""),
    "gpu": ("/h", ""),
    "tpu": ("/h", ""),
    "memory": ("/GiB-h", "/GiB/h"),
}
"""The units a price may be written in: per core, GPU or TPU chip and hour; per GiB and
hour for memory (a bare memory price is refused: per byte or per GiB is a guess)."""


def _pairs(text: str, flag: str) -> list[tuple[str, str]]:
    pairs = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        if not sep or key not in LEDGER_KEYS:
            raise ValueError(
                f"{flag} {part!r}: give RESOURCE=VALUE with RESOURCE one of "
                f"{', '.join(LEDGER_KEYS)}"
            )
        pairs.append((key, value.strip()))
    if not pairs:
        raise ValueError(f"{flag}: give at least one RESOURCE=VALUE")
    return pairs


def parse_quota(text: str) -> dict[str, Amount]:
    """``cpu=64,memory=256Gi,gpu=8`` (Kubernetes quantities) -> amounts per ledger key."""
    quota = {}
    for key, value in _pairs(text, "--quota"):
        parsed = amount(value)
        if parsed is None:
            raise ValueError(f"--quota {key}={value!r}: not a Kubernetes quantity")
        quota[key] = parsed
    return quota


@dataclass(frozen=True)
class Prices:
    """A price per hour for each ledger key: per core, GPU, TPU chip, GiB of memory."""

    per_hour: Mapping[str, Fraction]

    def hourly(self, resources: Resources) -> Fraction:
        total = Fraction(0)
        for key, price in self.per_hour.items():
            held = resources.get(key)
            if held is not None:
                total += held.value / _GIB * price if key == "memory" else held.value * price
        return total


def parse_prices(text: str) -> Prices:
    """``cpu=0.03/h,gpu=2.5/h,memory=0.004/GiB-h`` -> ``Prices``; no currency is assumed."""
    prices = {}
    for key, value in _pairs(text, "--price"):
        unit = next((u for u in _PRICE_UNITS[key] if u and value.endswith(u)), "")
        if not unit and "" not in _PRICE_UNITS[key]:
            raise ValueError(f"--price {key}={value!r}: give it per GiB and hour, e.g. 0.004/GiB-h")
        number = value.removesuffix(unit) if unit else value
        try:
            price = Fraction(Decimal(number))
        except (InvalidOperation, ValueError):
            units = " or ".join(u for u in _PRICE_UNITS[key] if u)
            raise ValueError(f"--price {key}={value!r}: give a number {units}") from None
        if price < 0:
            raise ValueError(f"--price {key}={value!r}: a price is not negative")
        prices[key] = price
    return Prices(prices)


def format_cost(value: Fraction) -> str:
    """Two decimals; four for a non-zero cost under 0.01, so it does not read as free."""
    places = 4 if 0 < abs(value) < Fraction(1, 100) else 2
    return f"{Decimal(value.numerator) / Decimal(value.denominator):.{places}f}"


def with_quota(report: Report, quota: Mapping[str, Amount], settings: ReviewSettings) -> Report:
    """``report`` with a ``quota-exceeded`` finding on each object that takes the change's
    peak over ``quota``: those whose own peak holds more of an exceeded resource than they
    held before (if none grows, every object holding some of it)."""
    if not quota or settings.is_off("quota-exceeded"):
        return report
    peak = report.total("peak")
    over = [key for key in LEDGER_KEYS if key in quota and peak[key].value > quota[key].value]
    if not over:
        return report
    someone_grows = {key: any(_grows(v, key) for v in report.verdicts) for key in over}
    verdicts = []
    for verdict in report.verdicts:
        keys = [
            key
            for key in over
            if (_grows(verdict, key) if someone_grows[key] else _held(verdict.peak, key))
        ]
        if not keys:
            verdicts.append(verdict)
            continue
        totals = ", ".join(
            f"{key} {format_quantity(peak[key])} > {format_quantity(quota[key])}" for key in keys
        )
        own = ", ".join(
            f"{key} {_quantity(verdict.before, key)} before, {_quantity(verdict.peak, key)} "
            "at its peak"
            for key in keys
        )
        finding = settings.finding(
            "quota-exceeded", verdict.ref, f"the change's peak exceeds the quota: {totals} ({own})"
        )
        verdicts.append(dataclasses.replace(verdict, findings=(*verdict.findings, finding)))
    return Report(tuple(verdicts), report.source)


def _held(resources: Resources, key: str) -> Fraction:
    held = resources.get(key)
    return held.value if held is not None else Fraction(0)


def _grows(verdict: Verdict, key: str) -> bool:
    return _held(verdict.peak, key) > _held(verdict.before, key)


def _quantity(resources: Resources, key: str) -> str:
    held = resources.get(key)
    return format_quantity(held) if held is not None else "0"
