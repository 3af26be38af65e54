"""Slow-start pod creation: batch sizes, the stop after a failed batch, and the pass's
time budget (no new batch once ``stop_after`` says so); which status changes may wait
for the pass that ends a scale-up."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from itertools import pairwise

import pytest

from operator_runtime.controllers.raycluster.batches import MAX_PARALLEL_CREATES, slow_start
from operator_runtime.controllers.raycluster.status import only_counts_changed


class Calls:
    """Calls that record how many of them were made; ``failing`` ones raise."""

    def __init__(self, count: int, *, failing: frozenset[int] = frozenset()) -> None:
        self.count, self.failing = count, failing
        self.made: list[int] = []

    def __iter__(self) -> Iterator[Callable[[], None]]:
        for index in range(self.count):
            self.made.append(index)
            yield self._call(index)

    def _call(self, index: int) -> Callable[[], None]:
        def call() -> None:
            if index in self.failing:
                raise RuntimeError(f"call {index} refused")

        return call


def batch_sizes(total: int, first: int = 1) -> list[int]:
    """The sizes of the batches ``slow_start`` makes of ``total`` calls."""
    calls = Calls(total)
    marks = [0]

    def stop_after() -> bool:  # asked before every batch but the first
        marks.append(len(calls.made))
        return False

    assert slow_start(calls, first=first, stop_after=stop_after) == total
    marks.append(len(calls.made))
    return [b - a for a, b in pairwise(marks) if b > a]


def test_batches_double_from_one() -> None:
    assert batch_sizes(20) == [1, 2, 4, 8, 5]


def test_a_group_with_pods_starts_at_a_full_batch() -> None:
    assert batch_sizes(40, first=16) == [16, 24]


def test_no_batch_starts_once_the_time_is_up_and_the_rest_is_left_unmade() -> None:
    calls = Calls(100)
    done = slow_start(calls, first=4, stop_after=lambda: True)
    assert done == 4
    assert calls.made == [0, 1, 2, 3], "later creations are not even rendered"


def test_the_first_failed_batch_is_the_last() -> None:
    calls = Calls(100, failing=frozenset({5}))
    with pytest.raises(RuntimeError, match="call 5 refused"):
        slow_start(calls)
    assert len(calls.made) == 7, "batches 1, 2, 4: the third failed, nothing after it"


def test_mid_scale_up_only_a_change_of_counts_may_wait_for_the_next_pass() -> None:
    old = {"state": "", "readyWorkerReplicas": 3, "desiredWorkerReplicas": 50,
           "conditions": [{"type": "HeadPodReady", "status": "False"}]}  # fmt: skip
    assert only_counts_changed(old, {**old, "readyWorkerReplicas": 9})
    assert not only_counts_changed(old, {**old, "readyWorkerReplicas": 9, "state": "ready"})
    head_ready = [{"type": "HeadPodReady", "status": "True"}]
    assert not only_counts_changed(old, {**old, "conditions": head_ready})


def test_a_batch_keeps_at_most_max_parallel_creates_in_flight() -> None:
    lock, running, peak = threading.Lock(), [0], [0]

    def call() -> None:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.01)
        with lock:
            running[0] -= 1

    assert slow_start((call for _ in range(100)), first=64) == 100
    assert peak[0] == MAX_PARALLEL_CREATES
