"""The create queue: groups served in turn, a bound on creates in flight, a failure
that stops its group and waits for the next pass, creates dropped once their pass's
view is stale, and expectations held until each create has run; which status changes
may wait for the pass that ends a scale-up, and how often counts alone are written
(at once when they reach their target).

The calls are plain functions: the subject is the queue's own logic (the real creates
against a real API server are in tests/integration/raycluster)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from operator_runtime.controllers.clusterstatus import counts_reached, only_counts_changed
from operator_runtime.controllers.raycluster.controller import (
    COUNT_WRITES_BURST,
    COUNT_WRITES_PER_SECOND,
    COUNTS_WRITE_INTERVAL,
    CountWrites,
)
from operator_runtime.controllers.raycluster.creates import MAX_IN_FLIGHT, CreateQueue
from operator_runtime.runtime.clock import FakeClock
from operator_runtime.runtime.expectations import Expectations
from operator_runtime.runtime.reconcile import ObjectKey


def always() -> bool:
    return True


class Recorder:
    """Calls that append (group, index) when they run; ``failing`` ones raise."""

    def __init__(self) -> None:
        self.made: list[tuple[str, int]] = []
        self._lock = threading.Lock()

    def calls(
        self, group: str, count: int, *, failing: frozenset[int] = frozenset(), hold: float = 0.0
    ) -> list[Callable[[], None]]:
        def call(index: int) -> Callable[[], None]:
            def run() -> None:
                time.sleep(hold)
                if index in failing:
                    raise RuntimeError(f"{group} create {index} refused")
                with self._lock:
                    self.made.append((group, index))

            return run

        return [call(index) for index in range(count)]


def test_groups_take_turns_so_a_small_group_is_not_queued_behind_a_big_one() -> None:
    expectations = Expectations()
    queue, recorder = CreateQueue(expectations, in_flight=1), Recorder()
    gate = threading.Event()
    queue.submit("ns/gate/g", [gate.wait], wanted=always)  # holds the only thread
    queue.submit("ns/big/g", recorder.calls("big", 50), wanted=always)
    queue.submit("ns/small/g", recorder.calls("small", 1), wanted=always)
    gate.set()
    assert queue.wait_idle(10)
    order = [group for group, _ in recorder.made]
    assert order.index("small") == 1, f"small waited behind big: {order[:5]}"
    assert [index for group, index in recorder.made if group == "big"] == list(range(50))


class Concurrency:
    """Counts calls running at once, and the most that ever did."""

    def __init__(self) -> None:
        self.lock, self.running, self.peak = threading.Lock(), 0, 0

    def run(self, seconds: float, then: Callable[[], None] = lambda: None) -> None:
        with self.lock:
            self.running += 1
            self.peak = max(self.peak, self.running)
        time.sleep(seconds)
        with self.lock:
            self.running -= 1
            then()


def test_at_most_in_flight_creates_run_at_once() -> None:
    counted = Concurrency()
    queue = CreateQueue(Expectations())
    for group in range(10):
        queue.submit(f"ns/c{group}/g", [lambda: counted.run(0.01)] * 10, wanted=always)
    assert queue.wait_idle(10)
    assert counted.peak == MAX_IN_FLIGHT


def test_a_group_waits_for_its_queued_creates_however_long_they_take() -> None:
    expectations = Expectations(timeout=0.0)  # named expectations lapse at once
    queue, gate = CreateQueue(expectations, in_flight=1), threading.Event()
    queue.submit("ns/c/g", [gate.wait, lambda: None], wanted=always)
    assert expectations.pending("ns/c/g") == 2
    assert not expectations.is_satisfied("ns/c/g", lambda *_: {}), "queued ones never lapse"
    gate.set()
    assert queue.wait_idle(10)
    assert expectations.is_satisfied("ns/c/g", lambda *_: {})


def test_the_first_failure_stops_the_group_and_waits_for_its_next_pass() -> None:
    expectations = Expectations()
    queue, recorder = CreateQueue(expectations, in_flight=1), Recorder()
    queue.submit("ns/bad/g", recorder.calls("bad", 20, failing=frozenset({2})), wanted=always)
    queue.submit("ns/good/g", recorder.calls("good", 20), wanted=always)
    assert queue.wait_idle(10)
    assert [i for g, i in recorder.made if g == "bad"] == [0, 1], "nothing after the failure"
    assert len([g for g, _ in recorder.made if g == "good"]) == 20, "other groups go on"
    failure = queue.take_failure("ns/bad/g")
    assert isinstance(failure, RuntimeError) and "create 2 refused" in str(failure)
    assert queue.take_failure("ns/bad/g") is None, "reported once"
    assert expectations.pending("ns/bad/g") == 0, "the dropped creates no longer hold it"
    assert queue.suspect("ns/bad/g") and not queue.suspect("ns/good/g")
    queue.accepted("ns/bad/g")  # a probe in a pass succeeded
    assert not queue.suspect("ns/bad/g")


def test_creates_whose_pass_is_stale_are_dropped_not_run() -> None:
    expectations = Expectations()
    queue, recorder = CreateQueue(expectations, in_flight=1), Recorder()
    current, gate = [True], threading.Event()
    queue.submit("ns/gate/g", [gate.wait], wanted=always)
    queue.submit("ns/c/g", recorder.calls("c", 30), wanted=lambda: current[0])
    assert queue.queued("ns/c/g") == 30
    current[0] = False  # e.g. the spec changed: a new generation
    queue.prune("ns/c/g")  # the next pass looks at the group
    assert queue.queued("ns/c/g") == 0 and expectations.pending("ns/c/g") == 0
    gate.set()
    assert queue.wait_idle(10)
    assert recorder.made == []


def test_a_stale_create_found_by_the_queue_drops_the_rest_of_its_group() -> None:
    expectations = Expectations()
    queue, recorder = CreateQueue(expectations, in_flight=1), Recorder()
    wanted = [True]

    def first_then_stale() -> None:
        wanted[0] = False  # the cluster is deleted while its creates run

    queue.submit("ns/c/g", [first_then_stale, *recorder.calls("c", 10)], wanted=lambda: wanted[0])
    assert queue.wait_idle(10)
    assert recorder.made == [] and expectations.pending("ns/c/g") == 0


def test_an_idle_queue_holds_no_threads() -> None:
    # The queue's own threads, not the process's count: a thread an earlier test left
    # behind may end meanwhile (a fresh-clone run saw 6 == 7 that way).
    before = set(threading.enumerate())

    def started_here() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t not in before and t.name == "pod-create"]

    release = threading.Event()
    queue = CreateQueue(Expectations())
    queue.submit("ns/c/g", [lambda: release.wait(10), *Recorder().calls("c", 20)], wanted=always)
    assert started_here(), "the queue started no thread for its work"
    release.set()
    assert queue.wait_idle(10)
    deadline = time.monotonic() + 5
    while started_here() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert started_here() == []


def test_closing_drops_what_is_queued_and_waits_for_what_runs() -> None:
    expectations = Expectations()
    queue, recorder = CreateQueue(expectations, in_flight=1), Recorder()
    started = threading.Event()

    def slow() -> None:
        started.set()
        time.sleep(0.2)

    queue.submit("ns/c/g", [slow, *recorder.calls("c", 10)], wanted=always)
    assert started.wait(5)
    queue.close()
    assert queue.wait_idle(0), "close returns once the running create ended"
    assert recorder.made == [] and expectations.pending("ns/c/g") == 0


def test_nothing_to_submit_queues_nothing() -> None:
    expectations = Expectations()
    queue = CreateQueue(expectations)
    assert queue.submit("ns/c/g", [], wanted=always) == 0
    assert queue.wait_idle(0.1) and expectations.pending("ns/c/g") == 0


def test_mid_scale_up_only_a_change_of_counts_may_wait_for_the_next_pass() -> None:
    old = {"state": "", "readyWorkerReplicas": 3, "desiredWorkerReplicas": 50,
           "conditions": [{"type": "HeadPodReady", "status": "False"}]}  # fmt: skip
    assert only_counts_changed(old, {**old, "readyWorkerReplicas": 9})
    assert not only_counts_changed(old, {**old, "readyWorkerReplicas": 9, "state": "ready"})
    head_ready = [{"type": "HeadPodReady", "status": "True"}]
    assert not only_counts_changed(old, {**old, "conditions": head_ready})


def test_count_only_status_writes_are_spaced_per_cluster_and_bounded_for_all() -> None:
    clock = FakeClock()
    writes = CountWrites(clock)
    keys = [ObjectKey("ns", f"c{n}") for n in range(3 * COUNT_WRITES_BURST)]
    allowed = [key for key in keys if writes.may_write(key)]
    assert len(allowed) == COUNT_WRITES_BURST, "a burst, then the shared budget is spent"
    for key in allowed:
        writes.written(key)
    clock.advance(1.0)
    # The ones just written wait out their interval (taking nothing from the budget);
    # the others share what one second refilled.
    assert not any(writes.may_write(key) for key in allowed)
    assert sum(writes.may_write(key) for key in keys) == COUNT_WRITES_PER_SECOND

    lone, key = CountWrites(clock), ObjectKey("ns", "lone")
    assert lone.may_write(key)
    lone.written(key)
    assert not lone.may_write(key), "the same cluster waits its interval"
    clock.advance(COUNTS_WRITE_INTERVAL)
    assert lone.may_write(key)


def test_counts_reaching_their_target_skip_the_interval_but_not_the_budget() -> None:
    clock = FakeClock()
    writes, key = CountWrites(clock), ObjectKey("ns", "big")
    assert writes.may_write(key)
    writes.written(key)
    assert not writes.may_write(key), "a count on the way waits out the interval"
    assert writes.may_write(key, reached=True), "the count that ends the scale-up does not"
    writes.written(key)
    spent, other = CountWrites(clock), ObjectKey("ns", "other")
    assert all(spent.may_write(other) for _ in range(COUNT_WRITES_BURST))  # never written
    assert not spent.may_write(key, reached=True), "it still takes from the shared budget"

    rising = {"readyWorkerReplicas": 498, "desiredWorkerReplicas": 500}
    assert not counts_reached(rising, {**rising, "readyWorkerReplicas": 499})
    assert counts_reached(rising, {**rising, "readyWorkerReplicas": 500})
    done = {"readyWorkerReplicas": 500, "desiredWorkerReplicas": 500}
    assert not counts_reached(done, {**done, "availableWorkerReplicas": 500}), "already there"
    shrinking = {"readyWorkerReplicas": 5, "desiredWorkerReplicas": 4}
    assert counts_reached(shrinking, {**shrinking, "readyWorkerReplicas": 4})


def test_a_group_is_busy_until_its_last_create_ran_then_the_queue_says_it_is_idle() -> None:
    """The group's next pass comes from ``on_idle``, once, after its last create settled
    its expectations: nothing has to poll the queue."""
    expectations = Expectations()
    idle: list[tuple[str, bool, int]] = []
    gate = threading.Event()

    def on_idle(group: str) -> None:
        idle.append((group, queue.busy(group), expectations.pending(group)))

    queue = CreateQueue(expectations, in_flight=2, on_idle=on_idle)
    queue.submit("ns/big/g", [gate.wait, *Recorder().calls("big", 5)], wanted=always)
    assert queue.busy("ns/big/g")
    time.sleep(0.05)
    assert queue.busy("ns/big/g") and not idle  # the first create still runs
    gate.set()
    assert queue.wait_idle(10)
    assert idle == [("ns/big/g", False, 0)]
    assert not queue.busy("ns/big/g")


def test_a_group_stopped_by_a_failure_is_idle_too_so_its_next_pass_reports_it() -> None:
    expectations = Expectations()
    idle: list[str] = []
    queue = CreateQueue(expectations, in_flight=1, on_idle=idle.append)
    queue.submit("ns/c/g", Recorder().calls("c", 3, failing=frozenset({0})), wanted=always)
    assert queue.wait_idle(10)
    assert idle == ["ns/c/g"]
    assert queue.take_failure("ns/c/g") is not None


def test_a_probe_runs_alone_then_the_rest_of_its_group_runs_side_by_side() -> None:
    """A group without pods sends one create first; the rest is queued with it but
    starts only once it succeeded (before, the rest waited for the next pass). Other
    groups are served meanwhile."""
    expectations = Expectations()
    queue, recorder = CreateQueue(expectations, in_flight=4), Recorder()
    gate, counted = threading.Event(), Concurrency()

    def probe() -> None:
        gate.wait()
        with counted.lock:
            recorder.made.append(("new", -1))

    def rest() -> None:
        counted.run(0.1, then=lambda: recorder.made.append(("new", 0)))

    queue.submit("ns/new/g", [probe, *[rest] * 8], wanted=always, probe=True)
    queue.submit("ns/other/g", recorder.calls("other", 3), wanted=always)
    deadline = time.monotonic() + 10
    while len(recorder.made) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sorted(recorder.made) == [("other", 0), ("other", 1), ("other", 2)], recorder.made
    assert queue.queued("ns/new/g") == 8, "nothing of the group starts beside its probe"
    gate.set()
    assert queue.wait_idle(10)
    assert [index for group, index in recorder.made if group == "new"] == [-1, *[0] * 8]
    assert counted.peak > 1, "once the probe succeeded, the rest is not run one at a time"
    assert expectations.pending("ns/new/g") == 0


def test_a_rejected_probe_costs_one_create_and_drops_the_rest_of_its_group() -> None:
    expectations = Expectations()
    idle: list[str] = []
    queue, recorder = CreateQueue(expectations, on_idle=idle.append), Recorder()
    calls = recorder.calls("bad", 20, failing=frozenset(range(20)))
    attempts = [0]

    def counted(call: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            attempts[0] += 1
            call()

        return run

    queue.submit("ns/bad/g", [counted(call) for call in calls], wanted=always, probe=True)
    assert queue.wait_idle(10)
    assert attempts[0] == 1
    assert isinstance(queue.take_failure("ns/bad/g"), RuntimeError)
    assert queue.suspect("ns/bad/g") and expectations.pending("ns/bad/g") == 0
    assert idle == ["ns/bad/g"], "its next pass is started to report it"
