"""Scale expectations: satisfied when the cache reflects the writes, or after a timeout
longer than watch stall detection plus a relist."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from operator_runtime.runtime.clock import FakeClock
from operator_runtime.runtime.context import ControllerContext, InformerSet
from operator_runtime.runtime.expectations import (
    RELIST_ALLOWANCE,
    Expectations,
    Lookup,
    timeout_for,
)
from operator_runtime.runtime.informer import WATCH_INACTIVITY_TIMEOUT
from operator_runtime.runtime.kinds import Object

GROUP = "ns/cluster/workers"


def cache_of(*names: str, leaving: Iterable[str] = ()) -> Lookup:
    """A lookup over a cache holding ``names``; those in ``leaving`` being deleted."""
    deleting = set(leaving)

    def lookup(_namespace: str, name: str) -> Object | None:
        if name not in names:
            return None
        metadata = {"name": name, "deletionTimestamp": "2026-11-24T00:00:00Z"}
        return {"metadata": metadata if name in deleting else {"name": name}}

    return lookup


EMPTY = cache_of()


def test_no_expectations_means_satisfied() -> None:
    assert Expectations(clock=FakeClock()).is_satisfied(GROUP, EMPTY)


def test_a_create_is_satisfied_once_the_cache_holds_the_object() -> None:
    expectations = Expectations(clock=FakeClock())
    expectations.expect_create(GROUP, "ns", "pod-a")
    assert not expectations.is_satisfied(GROUP, EMPTY)
    assert expectations.is_satisfied(GROUP, cache_of("pod-a"))
    assert expectations.pending(GROUP) == 0


def test_a_create_is_satisfied_by_the_object_already_being_deleted() -> None:
    # A pod deleted (stuck Terminating on a lost node) before any pass saw it live: the
    # cache has reflected the create, and the group must not wait for the timeout.
    expectations = Expectations(clock=FakeClock())
    expectations.expect_create(GROUP, "ns", "pod-a")
    assert expectations.is_satisfied(GROUP, cache_of("pod-a", leaving=["pod-a"]))


def test_a_create_is_satisfied_by_the_deletion_event_of_an_object_never_seen() -> None:
    expectations = Expectations(clock=FakeClock())
    expectations.expect_create(GROUP, "ns", "pod-a")
    expectations.expect_create(GROUP, "ns", "pod-b")
    expectations.expect_delete("ns/cluster/other", "ns", "pod-a")
    expectations.observe_gone("ns", "pod-a")
    assert expectations.pending(GROUP) == 1, "only pod-a's create is reflected"
    assert not expectations.is_satisfied(GROUP, EMPTY)
    assert expectations.pending("ns/cluster/other") == 1, "a delete waits for the cache"
    expectations.observe_gone("ns", "pod-b")
    assert expectations.is_satisfied(GROUP, EMPTY)


def test_a_delete_is_satisfied_once_the_cache_no_longer_holds_the_object() -> None:
    # The 5 -> 4 scale-down: until the deleted pod leaves the cache, the group would
    # look one pod short and a naive reconcile would recreate it.
    expectations = Expectations(clock=FakeClock())
    expectations.expect_delete(GROUP, "ns", "pod-e")
    assert not expectations.is_satisfied(GROUP, cache_of("pod-e"))
    assert expectations.is_satisfied(GROUP, EMPTY)


def test_a_delete_is_satisfied_once_the_cache_shows_the_object_being_deleted() -> None:
    # As the ReplicaSet controller: a pod stuck Terminating must not hold its group.
    expectations = Expectations(clock=FakeClock())
    expectations.expect_delete(GROUP, "ns", "pod-e")
    assert expectations.is_satisfied(GROUP, cache_of("pod-e", leaving=["pod-e"]))


def test_every_item_of_the_group_must_be_satisfied_and_satisfied_items_are_forgotten() -> None:
    expectations = Expectations(clock=FakeClock())
    expectations.expect_create(GROUP, "ns", "a")
    expectations.expect_create(GROUP, "ns", "b")
    present = {"a"}
    assert not expectations.is_satisfied(GROUP, cache_of(*present))
    assert expectations.pending(GROUP) == 1
    present = {"b"}  # "a" was satisfied before and stays forgotten
    assert expectations.is_satisfied(GROUP, cache_of(*present))


def test_expectations_outlast_watch_stall_detection_plus_a_relist() -> None:
    # A create event held up by a stalled watch arrives only after the informer notices
    # the stall (70 s) and relists; timing out before that made a duplicate pod.
    clock = FakeClock()
    expectations = Expectations(clock=clock)
    assert expectations.timeout == timeout_for(WATCH_INACTIVITY_TIMEOUT)
    assert expectations.timeout >= WATCH_INACTIVITY_TIMEOUT + RELIST_ALLOWANCE
    expectations.expect_create(GROUP, "ns", "never-seen")
    clock.advance(WATCH_INACTIVITY_TIMEOUT + 10)
    assert not expectations.is_satisfied(GROUP, EMPTY)
    clock.advance(expectations.timeout)
    assert expectations.is_satisfied(GROUP, EMPTY)


def test_a_context_never_makes_expectations_shorter_than_its_stall_detection() -> None:
    for inactivity in (10.0, 70.0, 200.0):
        informers = InformerSet(None, inactivity_timeout=inactivity)  # type: ignore[arg-type]
        context = ControllerContext(client=None, informers=informers, clock=FakeClock(),  # type: ignore[arg-type]
                                    events=lambda _: None)  # type: ignore[arg-type,return-value]  # fmt: skip
        assert context.expectations(30.0).timeout == max(30.0, timeout_for(inactivity))


def test_an_unknown_create_blocks_the_group_until_a_fresh_list() -> None:
    clock = FakeClock()
    expectations = Expectations(clock=clock)
    expectations.expect_unknown(GROUP)
    assert expectations.has_unknown(GROUP)
    assert not expectations.is_satisfied(GROUP, cache_of("pod-e")), "no name to look for"
    cache = {"old"}
    # The LIST shows the pod that the 504'd create did make; the cache not yet.
    expectations.resolve_unknown(GROUP, [("ns", "old"), ("ns", "made")],
                                 cache_of(*cache))  # fmt: skip
    assert not expectations.has_unknown(GROUP)
    assert not expectations.is_satisfied(GROUP, cache_of(*cache))
    cache.add("made")
    assert expectations.is_satisfied(GROUP, cache_of(*cache))


def test_an_unknown_create_that_made_nothing_unblocks_after_the_list() -> None:
    expectations = Expectations(clock=FakeClock())
    expectations.expect_unknown(GROUP)
    expectations.resolve_unknown(GROUP, [], EMPTY)
    assert expectations.is_satisfied(GROUP, EMPTY)


def test_an_unresolved_unknown_gives_up_after_the_timeout() -> None:
    clock = FakeClock()
    expectations = Expectations(clock=clock)
    expectations.expect_unknown(GROUP)
    clock.advance(expectations.timeout)
    assert expectations.is_satisfied(GROUP, EMPTY)


def test_groups_are_independent_and_can_be_forgotten_by_prefix() -> None:
    expectations = Expectations(clock=FakeClock())
    expectations.expect_create("ns/c1/g1", "ns", "a")
    expectations.expect_create("ns/c1/g2", "ns", "b")
    expectations.expect_create("ns/c2/g1", "ns", "c")
    assert expectations.is_satisfied("ns/other/g1", EMPTY)
    expectations.forget_prefix("ns/c1/")
    assert expectations.is_satisfied("ns/c1/g1", EMPTY)
    assert expectations.is_satisfied("ns/c1/g2", EMPTY)
    assert not expectations.is_satisfied("ns/c2/g1", EMPTY)


def test_lapses_in_is_the_first_named_items_timeout_and_queued_creates_never_lapse() -> None:
    clock = FakeClock()
    expectations = Expectations(clock=clock, timeout=100.0)
    assert expectations.lapses_in(GROUP) is None
    expectations.expect_queued(GROUP)
    assert expectations.lapses_in(GROUP) is None, "its queue wakes the group, not a timer"
    expectations.expect_create(GROUP, "ns", "a")
    clock.advance(30)
    expectations.expect_delete(GROUP, "ns", "b")
    assert expectations.lapses_in(GROUP) == pytest.approx(70.0)
    clock.advance(80)
    assert expectations.lapses_in(GROUP) == 0.0
