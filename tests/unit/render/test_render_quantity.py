"""Kubernetes quantity parsing, rounding as resource.Quantity does."""

from __future__ import annotations

from fractions import Fraction

import pytest

from operator_runtime.render.quantity import (
    QuantityError,
    parse_quantity,
    quantity_as_float,
    quantity_is_zero,
    quantity_value,
)


@pytest.mark.parametrize(
    ("text", "exact"),
    [
        ("500m", Fraction(1, 2)),
        ("1", Fraction(1)),
        ("1Gi", Fraction(2**30)),
        ("2Ki", Fraction(2048)),
        ("2e3", Fraction(2000)),
        ("1E2", Fraction(100)),
        ("1e-3", Fraction(1, 1000)),
        ("1E", Fraction(10**18)),
        ("1.5", Fraction(3, 2)),
        (".5", Fraction(1, 2)),
        ("5.", Fraction(5)),
        ("+3k", Fraction(3000)),
        ("-1.5", Fraction(-3, 2)),
        ("100u", Fraction(1, 10_000)),
        ("7n", Fraction(7, 10**9)),
        (2, Fraction(2)),
        (0.5, Fraction(1, 2)),
    ],
)
def test_parses_exactly(text: str | int | float, exact: Fraction) -> None:
    assert parse_quantity(text) == exact


@pytest.mark.parametrize("text", ["", "1e", "1ki", "Gi", "1 Gi", "1.2.3", "--1", "1Gb", "."])
def test_refuses_what_kubernetes_refuses(text: str) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)


def test_bool_is_not_a_quantity() -> None:
    with pytest.raises(QuantityError):
        parse_quantity(True)


@pytest.mark.parametrize(
    ("text", "value"),
    [("500m", 1), ("1", 1), ("1001m", 2), ("0.1", 1), ("3.0000000000000001", 4), ("-1.5", -2)],
)
def test_value_rounds_away_from_zero(text: str, value: int) -> None:
    assert quantity_value(text) == value


def test_zero_and_float() -> None:
    assert quantity_is_zero("0m") and quantity_is_zero("0Gi")
    assert not quantity_is_zero("1n")
    assert quantity_as_float("1500m") == 1.5


@pytest.mark.parametrize("text", ["1e999999999", "5E-999999999", "1e101", "1" * 129])
def test_quantities_beyond_any_real_resource_are_refused_not_computed(text: str) -> None:
    # Unbounded, the first would build a billion-digit integer on every reconcile.
    with pytest.raises(QuantityError, match=r"out of range|too long"):
        parse_quantity(text)


def test_the_largest_accepted_exponent_still_parses() -> None:
    assert parse_quantity("2e100") == 2 * Fraction(10) ** 100
