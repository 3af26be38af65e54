"""tests/tierscope.py: what a tier's fixtures started stops when a worker leaves the tier,
once, and not while it stays."""

from __future__ import annotations

from pathlib import Path

from tests import tierscope

TIER = Path("/repo/tests/node")


def test_a_tier_stops_when_the_next_test_is_elsewhere_and_only_once() -> None:
    stopped: list[str] = []
    own_end = tierscope.stop_on_leaving(TIER, lambda: stopped.append("cluster"))
    tierscope.left(TIER / "test_a.py", TIER / "test_b.py")
    assert stopped == []
    tierscope.left(TIER / "test_b.py", Path("/repo/tests/integration/test_c.py"))
    assert stopped == ["cluster"]
    own_end()  # the fixture's own end, at the session's
    assert stopped == ["cluster"]


def test_the_last_test_of_a_run_stops_it_and_the_fixtures_end_stops_the_rest() -> None:
    stopped: list[str] = []
    tierscope.stop_on_leaving(TIER, lambda: stopped.append("first"))
    tierscope.stop_on_leaving(TIER, lambda: stopped.append("second"))
    tierscope.left(Path("/repo/tests/e2e/test_x.py"), None)
    assert stopped == []
    tierscope.left(TIER / "test_a.py", None)
    assert stopped == ["second", "first"]

    never_left = tierscope.stop_on_leaving(TIER, lambda: stopped.append("third"))
    never_left()
    assert stopped == ["second", "first", "third"]
    tierscope.left(TIER / "test_a.py", None)
    assert stopped == ["second", "first", "third"]
