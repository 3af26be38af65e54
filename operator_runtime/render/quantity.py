"""Kubernetes resource quantities (``"500m"``, ``"4Gi"``, ``"2e3"``) as exact fractions.

KubeRay derives ``ray start`` flags from container resources with the semantics of
``resource.Quantity``: ``Value()`` rounds *up* to an integer (500m CPU -> 1),
``IsZero()`` and ``AsApproximateFloat64()``. A float would turn ``"0.1"`` into
0.1000000000000000055 and round it up to 1 where Kubernetes agrees, but would also
misround values such as ``"3.0000000000000001"``; ``Fraction`` keeps every input exact.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Final

_BINARY: Final = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL: Final = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
# <quantity> ::= <sign><number><suffix>; <number> allows "5", "5.", ".5", "5.5".
_QUANTITY: Final = re.compile(
    r"(?P<sign>[+-]?)(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?P<suffix>[eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE]?)"
)


_MAX_TEXT: Final = 128
_MAX_EXPONENT: Final = 100
"""A spec is hostile: ``1e999999999`` is a valid quantity to the API server, and exact
arithmetic on it would build a billion-digit number (seconds of CPU and gigabytes on every
pass). Nothing real is longer than this or beyond 10**100, so such values are refused."""


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def parse_quantity(value: str | int | float) -> Fraction:
    """The exact value of a quantity; bare numbers (as YAML gives them) are accepted."""
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is not a quantity")
    if isinstance(value, int):
        return Fraction(value)
    text = repr(value) if isinstance(value, float) else value
    if len(text) > _MAX_TEXT:
        raise QuantityError(
            f"a quantity of {len(text)} characters is too long (at most {_MAX_TEXT})"
        )
    match = _QUANTITY.fullmatch(text)
    if match is None:
        raise QuantityError(f"{value!r} is not a quantity (expected e.g. 500m, 4Gi, 2e3)")
    number = Fraction(match["number"])
    if match["sign"] == "-":
        number = -number
    suffix = match["suffix"]
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if len(suffix) > 1 and suffix[0] in "eE":
        exponent = int(suffix[1:])
        if abs(exponent) > _MAX_EXPONENT:
            raise QuantityError(f"{value!r} is out of range (exponents up to {_MAX_EXPONENT})")
        return number * (Fraction(10) ** exponent)
    return number * _DECIMAL[suffix]


def quantity_value(value: str | int | float) -> int:
    """``Quantity.Value()``: rounded away from zero to an integer (``"500m"`` -> 1)."""
    exact = parse_quantity(value)
    return math.ceil(exact) if exact >= 0 else math.floor(exact)


def quantity_is_zero(value: str | int | float) -> bool:
    """``Quantity.IsZero()``."""
    return parse_quantity(value) == 0


def quantity_as_float(value: str | int | float) -> float:
    """``Quantity.AsApproximateFloat64()``."""
    return float(parse_quantity(value))
