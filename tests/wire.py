"""Comparing objects in their wire form (plain JSON) in tests."""

from __future__ import annotations

from typing import Any


def contains(actual: Any, expected: Any) -> bool:
    """Whether ``actual`` holds everything in ``expected``: every key of a mapping with a
    contained value (extra keys, such as defaults, are fine), lists element by element
    with the same length, anything else equal."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            key in actual and contains(actual[key], value) for key, value in expected.items()
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(contains(a, e) for a, e in zip(actual, expected, strict=True))
        )
    return bool(actual == expected)
