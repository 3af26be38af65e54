"""Work queue semantics: dedup, one worker per key, backoff, delays, fairness."""

from __future__ import annotations

import threading
import time

import pytest

from operator_runtime.runtime.clock import FakeClock
from operator_runtime.runtime.workqueue import ExponentialBackoff, WorkQueue


def drain(queue: WorkQueue[str]) -> list[str]:
    keys = []
    while (key := queue.get(block=False)) is not None:
        keys.append(key)
        queue.done(key)
    return keys


def test_adding_a_waiting_key_twice_queues_it_once() -> None:
    queue: WorkQueue[str] = WorkQueue(clock=FakeClock())
    for key in ["a", "b", "a", "a", "b", "c"]:
        queue.add(key)
    assert len(queue) == 3
    assert drain(queue) == ["a", "b", "c"]


def test_a_key_being_processed_is_not_handed_out_again_but_is_requeued_after_done() -> None:
    queue: WorkQueue[str] = WorkQueue(clock=FakeClock())
    queue.add("a")
    assert queue.get(block=False) == "a"
    queue.add("a")  # changed while a worker reconciles it
    queue.add("a")
    assert queue.get(block=False) is None, "a second worker must not get the same key"
    queue.done("a")
    assert queue.get(block=False) == "a", "the change seen mid-reconcile is not lost"
    queue.done("a")
    assert queue.get(block=False) is None


def test_per_key_backoff_doubles_from_5ms_to_a_1000s_cap_and_forget_resets() -> None:
    backoff: ExponentialBackoff[str] = ExponentialBackoff()
    delays = [backoff.next_delay("a") for _ in range(22)]
    assert delays[:4] == [0.005, 0.01, 0.02, 0.04]
    assert delays[-1] == 1000.0
    assert max(delays) == 1000.0
    assert backoff.next_delay("b") == 0.005, "keys back off independently"
    backoff.forget("a")
    assert backoff.next_delay("a") == 0.005


def test_rate_limited_keys_come_back_when_their_delay_has_passed() -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock)
    assert queue.add_rate_limited("a") == 0.005
    assert queue.add_rate_limited("a") == 0.01
    assert queue.num_requeues("a") == 2
    assert queue.get(block=False) is None
    clock.advance(0.006)
    assert queue.get(block=False) == "a"
    queue.done("a")
    queue.forget("a")
    assert queue.num_requeues("a") == 0


def test_add_after_keeps_the_earliest_due_time() -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock)
    queue.add_after("a", 10)
    queue.add_after("a", 2)
    queue.add_after("a", 30)
    clock.advance(2)
    assert queue.get(block=False) == "a"
    queue.done("a")
    clock.advance(30)
    assert queue.get(block=False) is None, "superseded delays must not fire again"


def test_cancel_after_drops_only_a_delay_its_source_set() -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock)
    queue.add_after("a", 2, "counts")
    queue.add_after("b", 2, "requeue_after")
    queue.cancel_after("a", "counts")
    queue.cancel_after("b", "counts")  # another source's timer stays
    queue.cancel_after("c", "counts")  # nothing pending: nothing happens
    clock.advance(3)
    assert drain(queue) == ["b"]
    queue.add_after("a", 1, "counts")  # a later timer of that source still fires
    clock.advance(1)
    assert drain(queue) == ["a"]


def test_a_hot_key_cannot_starve_the_others() -> None:
    queue: WorkQueue[str] = WorkQueue(clock=FakeClock())
    for index in range(100):
        queue.add(f"k{index}")
    served: list[str] = []
    queue.add("hot")
    for _ in range(101):
        key = queue.get(block=False)
        assert key is not None
        served.append(key)
        queue.add("hot")  # re-added on every step, as a hot object would be
        queue.done(key)
    assert served.count("hot") <= 2
    assert {f"k{index}" for index in range(100)} <= set(served)


def test_a_slow_key_holds_one_worker_while_others_finish() -> None:
    queue: WorkQueue[str] = WorkQueue()
    release = threading.Event()
    finished: list[str] = []

    def worker() -> None:
        while (key := queue.get()) is not None:
            if key == "slow":
                release.wait(5)
            finished.append(key)
            queue.done(key)

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    queue.add("slow")
    for index in range(50):
        queue.add(f"k{index}")
    deadline = time.monotonic() + 5
    while len(finished) < 50 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(finished) == 50 and "slow" not in finished
    release.set()
    queue.shut_down()
    for thread in threads:
        thread.join(5)
    assert queue.wait_idle(1)


def test_blocking_get_wakes_for_a_delayed_key() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add_after("later", 0.05)
    started = time.monotonic()
    assert queue.get() == "later"
    assert 0.04 <= time.monotonic() - started < 1.0


def test_shut_down_stops_intake_and_wakes_blocked_workers() -> None:
    queue: WorkQueue[str] = WorkQueue()
    results: list[str | None] = []
    thread = threading.Thread(target=lambda: results.append(queue.get()))
    thread.start()
    time.sleep(0.05)
    queue.shut_down()
    thread.join(2)
    assert results == [None]
    queue.add("x")
    assert queue.get(block=False) is None


def test_wait_idle_drains_in_flight_work() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    key = queue.get()
    queue.shut_down()
    assert not queue.wait_idle(0.05)
    threading.Timer(0.05, queue.done, args=(key,)).start()
    assert queue.wait_idle(2)


class CountingMetrics:
    def __init__(self) -> None:
        self.adds = self.retries = 0
        self.depths: list[int] = []
        self.waits: list[float] = []
        self.work: list[float] = []

    def added(self) -> None:
        self.adds += 1

    def depth(self, depth: int) -> None:
        self.depths.append(depth)

    def retried(self) -> None:
        self.retries += 1

    def waited(self, seconds: float) -> None:
        self.waits.append(seconds)

    def worked(self, seconds: float) -> None:
        self.work.append(seconds)


def test_metrics_measure_queue_latency_and_work_duration_on_the_injected_clock() -> None:
    clock = FakeClock()
    metrics = CountingMetrics()
    queue: WorkQueue[str] = WorkQueue(clock=clock, metrics=metrics)
    queue.add("a")
    queue.add("a")
    clock.advance(3)
    key = queue.get(block=False)
    clock.advance(2)
    assert key == "a"
    queue.done(key)
    queue.add_rate_limited("a")
    assert metrics.adds == 1
    assert metrics.waits == [3]
    assert metrics.work == [2]
    assert metrics.retries == 1
    assert metrics.depths[-1] == 0


def test_on_trigger_hears_the_source_of_each_add_that_causes_a_pass() -> None:
    clock = FakeClock()
    heard: list[str] = []
    queue: WorkQueue[str] = WorkQueue(clock=clock, on_trigger=heard.append)
    queue.add("a", "Pod/MODIFIED")
    queue.add("a", "Pod/ADDED")  # absorbed: "a" is already waiting
    key = queue.get(block=False)
    assert key == "a"
    queue.add("a", "RayCluster/MODIFIED")  # mid-pass: one more pass after this one
    queue.add("a", "Pod/DELETED")  # absorbed by that one
    queue.done("a")
    assert queue.get(block=False) == "a"
    queue.done("a")
    queue.add_after("a", 2)
    queue.add_rate_limited("b")
    clock.advance(5)
    assert {queue.get(block=False), queue.get(block=False)} == {"a", "b"}
    # Delayed keys come due in order: the retry's 5 ms before the requeue's 2 s.
    assert heard == ["Pod/MODIFIED", "RayCluster/MODIFIED", "retry", "requeue_after"]


def test_retries_share_a_10_per_second_bucket_of_100_after_the_burst() -> None:
    """client-go's default controller rate limiter: max(per-key backoff, overall bucket).
    150 keys failing at once: the first 100 take the burst (5 ms backoff), the rest are
    spaced a tenth of a second apart, whatever their own backoff says."""
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock)
    delays = [queue.add_rate_limited(f"k{i}") for i in range(150)]
    assert delays[:100] == [0.005] * 100
    assert delays[100:] == [(i + 1) / 10 for i in range(50)]
    clock.advance(0.1)
    assert len(drain(queue)) == 101, "the burst plus the first paced retry"
    clock.advance(4.9)
    assert len(drain(queue)) == 49
    # Refilled at 10 per second: after 10 quiet seconds the bucket holds 100 again.
    clock.advance(10.0)
    assert queue.add_rate_limited("fresh") == 0.005


def test_the_retry_bucket_only_paces_rate_limited_adds() -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock)
    for i in range(100):
        queue.add_rate_limited(f"k{i}")
    for i in range(50):
        queue.add(f"event{i}")
        queue.add_after(f"timer{i}", 0.001)
    clock.advance(0.005)
    assert len(drain(queue)) == 200, "plain adds and timers take no retry tokens"
    # 5 ms refilled a twentieth of a token: the 101st retry waits for the rest of one.
    assert queue.add_rate_limited("k0") == pytest.approx(0.095)


def test_the_longer_per_key_backoff_wins_and_still_takes_a_token() -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock)
    for _ in range(12):
        delay = queue.add_rate_limited("slow")
    assert delay == 0.005 * 2**11, "its own backoff is longer than the bucket's wait"
    for i in range(88):
        queue.add_rate_limited(f"k{i}")
    assert queue.add_rate_limited("late") == 0.1, "the slow key's 12 retries spent tokens"
