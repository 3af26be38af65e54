"""Which outcomes of KubeRay's e2e tests fail a run (tests/node/kuberay_e2e.py): what
``EXPECTED`` gives, and for a subtest in ``RACES`` a pass or a fail, with its parent's
fail accepted only when every failed subtest under it raced."""

from __future__ import annotations

import json
from dataclasses import asdict

from tests.node.kuberay_e2e import EXPECTED, RACES, Result, table, unexpected

RACED = sorted(RACES)[0]
PARENT = RACED.rsplit("/", 1)[0]
SIBLING = f"{PARENT}/Create_a_RayCluster_with_autoscaling_enabled"


def results(**outcomes: str) -> list[Result]:
    names = {"parent": PARENT, "raced": RACED, "sibling": SIBLING}
    return [Result("ours", names[key], outcome, 1.0) for key, outcome in outcomes.items()]


def test_a_raced_subtest_may_pass_or_fail_and_its_parent_follows() -> None:
    assert unexpected(results(parent="PASS", raced="PASS", sibling="PASS"), "ours") == []
    assert unexpected(results(parent="FAIL", raced="FAIL", sibling="PASS"), "ours") == []


def test_a_parent_fails_the_run_when_a_subtest_that_did_not_race_failed() -> None:
    found = unexpected(results(parent="FAIL", raced="FAIL", sibling="FAIL"), "ours")
    assert found == [(PARENT, "FAIL", "PASS"), (SIBLING, "FAIL", "PASS")]


def test_a_raced_subtest_that_neither_passed_nor_failed_fails_the_run() -> None:
    found = unexpected(results(parent="PASS", raced="SKIP"), "kuberay-v1.6.2")
    assert found == [(RACED, "SKIP", "PASS")]


def test_a_listed_difference_must_have_its_listed_outcome() -> None:
    test, entry = next(iter(EXPECTED.items()))
    assert unexpected([Result("ours", test, entry.ours, 1.0)], "ours") == []
    assert unexpected([Result("ours", test, "PASS", 1.0)], "ours") == [(test, "PASS", entry.ours)]


def test_the_report_gives_a_raced_subtest_its_reason() -> None:
    line = json.dumps(asdict(Result("ours", RACED, "FAIL", 289.0)))
    (row,) = [r for r in table([line]).splitlines() if r.startswith(f"| {RACED} ")]
    assert "FAIL 289s" in row and RACES[RACED] in row
