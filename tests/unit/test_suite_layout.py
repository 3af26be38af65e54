"""The suite's own layout: what would stop `make test` before its first test."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_test_modules_have_unique_basenames() -> None:
    # pytest imports test modules by basename (the test folders are not packages), so
    # two modules of one name in different tiers fail the whole session at collection;
    # a tier run alone does not show it.
    where: dict[str, list[str]] = defaultdict(list)
    for path in TESTS.rglob("test_*.py"):
        where[path.name].append(str(path.relative_to(TESTS)))
    clashes = {name: paths for name, paths in where.items() if len(paths) > 1}
    assert not clashes, f"test modules sharing a basename: {clashes}"
