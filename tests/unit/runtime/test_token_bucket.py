"""The client-side token bucket behind --qps/--burst."""

from __future__ import annotations

import pytest

from operator_runtime.runtime.clock import FakeClock
from operator_runtime.runtime.ratelimit import TokenBucket


def test_burst_is_free_then_requests_are_spaced_at_qps() -> None:
    bucket = TokenBucket(10, 3, clock=FakeClock())
    assert [bucket.reserve() for _ in range(3)] == [0, 0, 0]
    assert bucket.reserve() == pytest.approx(0.1)
    assert bucket.reserve() == pytest.approx(0.2), "waiting callers queue up in order"


def test_tokens_refill_with_time_up_to_burst() -> None:
    clock = FakeClock()
    bucket = TokenBucket(100, 200, clock=clock)
    for _ in range(200):
        assert bucket.reserve() == 0
    assert bucket.reserve() > 0
    clock.advance(60)
    assert sum(1 for _ in range(200) if bucket.reserve() == 0) == 200
    assert bucket.reserve() > 0, "refill is capped at burst"


def test_wait_sleeps_for_the_reserved_delay() -> None:
    slept: list[float] = []
    bucket = TokenBucket(2, 1, clock=FakeClock(), sleep=slept.append)
    bucket.wait()
    bucket.wait()
    assert slept == [pytest.approx(0.5)]


def test_try_take_never_queues() -> None:
    clock = FakeClock()
    bucket = TokenBucket(1, 2, clock=clock)
    assert bucket.try_take() and bucket.try_take()
    assert not bucket.try_take()
    clock.advance(1)
    assert bucket.try_take()


def test_zero_qps_disables_limiting_and_burst_must_be_positive() -> None:
    bucket = TokenBucket(0, 1, clock=FakeClock())
    assert all(bucket.reserve() == 0 for _ in range(1000))
    with pytest.raises(ValueError, match="burst"):
        TokenBucket(1, 0)
