"""Scale expectations: satisfied when the cache reflects the writes, or after 30 s."""

from __future__ import annotations

from operator_runtime.runtime.clock import FakeClock
from operator_runtime.runtime.expectations import Expectations

GROUP = "ns/cluster/workers"


def test_no_expectations_means_satisfied() -> None:
    assert Expectations(clock=FakeClock()).is_satisfied(GROUP, lambda ns, name: False)


def test_a_create_is_satisfied_once_the_cache_holds_the_object() -> None:
    expectations = Expectations(clock=FakeClock())
    expectations.expect_create(GROUP, "ns", "pod-a")
    cache: set[tuple[str, str]] = set()
    assert not expectations.is_satisfied(GROUP, lambda ns, name: (ns, name) in cache)
    cache.add(("ns", "pod-a"))
    assert expectations.is_satisfied(GROUP, lambda ns, name: (ns, name) in cache)
    assert expectations.pending(GROUP) == 0


def test_a_delete_is_satisfied_once_the_cache_no_longer_holds_the_object() -> None:
    # The 5 -> 4 scale-down: until the deleted pod leaves the cache, the group would
    # look one pod short and a naive reconcile would recreate it.
    expectations = Expectations(clock=FakeClock())
    expectations.expect_delete(GROUP, "ns", "pod-e")
    assert not expectations.is_satisfied(GROUP, lambda ns, name: True)
    assert expectations.is_satisfied(GROUP, lambda ns, name: False)


def test_every_item_of_the_group_must_be_satisfied_and_satisfied_items_are_forgotten() -> None:
    expectations = Expectations(clock=FakeClock())
    expectations.expect_create(GROUP, "ns", "a")
    expectations.expect_create(GROUP, "ns", "b")
    present = {"a"}
    assert not expectations.is_satisfied(GROUP, lambda ns, name: name in present)
    assert expectations.pending(GROUP) == 1
    present = {"b"}  # "a" was satisfied before and stays forgotten
    assert expectations.is_satisfied(GROUP, lambda ns, name: name in present)


def test_expectations_time_out_after_30_seconds() -> None:
    clock = FakeClock()
    expectations = Expectations(clock=clock)
    expectations.expect_create(GROUP, "ns", "never-seen")
    clock.advance(29.9)
    assert not expectations.is_satisfied(GROUP, lambda ns, name: False)
    clock.advance(0.1)
    assert expectations.is_satisfied(GROUP, lambda ns, name: False)


def test_groups_are_independent_and_can_be_forgotten_by_prefix() -> None:
    expectations = Expectations(clock=FakeClock())
    expectations.expect_create("ns/c1/g1", "ns", "a")
    expectations.expect_create("ns/c1/g2", "ns", "b")
    expectations.expect_create("ns/c2/g1", "ns", "c")
    assert expectations.is_satisfied("ns/other/g1", lambda ns, name: False)
    expectations.forget_prefix("ns/c1/")
    assert expectations.is_satisfied("ns/c1/g1", lambda ns, name: False)
    assert expectations.is_satisfied("ns/c1/g2", lambda ns, name: False)
    assert not expectations.is_satisfied("ns/c2/g1", lambda ns, name: False)
