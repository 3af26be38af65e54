"""The Lease protocol, against an in-memory Lease store with optimistic concurrency."""

from __future__ import annotations

import copy
import threading
import time
from typing import Any

from operator_runtime.runtime.clock import FakeClock, SystemClock
from operator_runtime.runtime.errors import AlreadyExists, Conflict, NotFound, TransportError
from operator_runtime.runtime.leader import LeaderElectionConfig, LeaseElector


class LeaseStore:
    def __init__(self) -> None:
        self.lease: dict[str, Any] | None = None
        self.version = 0
        self.deadlines: list[float] = []

    def bounded(self, deadline: float) -> LeaseStore:
        self.deadlines.append(deadline)
        return self

    def get(self, kind: Any, name: str, namespace: str) -> dict[str, Any]:
        if self.lease is None:
            raise NotFound(404, "no lease")
        return copy.deepcopy(self.lease)

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        if self.lease is not None:
            raise AlreadyExists(409, "exists", reason="AlreadyExists")
        return self._store(obj)

    def update(self, obj: dict[str, Any]) -> dict[str, Any]:
        assert self.lease is not None
        if obj["metadata"]["resourceVersion"] != self.lease["metadata"]["resourceVersion"]:
            raise Conflict(409, "stale")
        return self._store(obj)

    def _store(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.version += 1
        self.lease = copy.deepcopy(obj)
        self.lease["metadata"]["resourceVersion"] = str(self.version)
        return copy.deepcopy(self.lease)


def elector(store: LeaseStore, identity: str, clock: FakeClock) -> LeaseElector:
    config = LeaderElectionConfig(
        namespace="ns",
        name="lock",
        identity=identity,
        lease_duration=15,
        renew_deadline=10,
        retry_period=2,
    )
    return LeaseElector(store, config, clock=clock)  # type: ignore[arg-type]


def test_first_candidate_creates_the_lease_and_the_second_waits() -> None:
    store, clock = LeaseStore(), FakeClock()
    a, b = elector(store, "a", clock), elector(store, "b", clock)
    assert a.try_acquire_or_renew() and a.is_leader
    assert not b.try_acquire_or_renew()
    assert store.lease is not None and store.lease["spec"]["holderIdentity"] == "a"
    assert a.try_acquire_or_renew(), "the holder renews"


def test_a_standby_takes_over_only_after_the_lease_duration_on_its_own_clock() -> None:
    store, clock = LeaseStore(), FakeClock()
    a, b = elector(store, "a", clock), elector(store, "b", clock)
    a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    clock.advance(14)
    assert not b.try_acquire_or_renew()
    clock.advance(1.5)  # a stopped renewing (e.g. SIGKILL)
    assert b.try_acquire_or_renew()
    assert store.lease is not None
    assert store.lease["spec"]["holderIdentity"] == "b"
    assert store.lease["spec"]["leaseTransitions"] == 1


def test_renewals_by_the_holder_keep_the_standby_out() -> None:
    store, clock = LeaseStore(), FakeClock()
    a, b = elector(store, "a", clock), elector(store, "b", clock)
    for _ in range(20):
        assert a.try_acquire_or_renew()
        assert not b.try_acquire_or_renew()
        clock.advance(2)


def test_release_lets_a_standby_take_over_at_once() -> None:
    store, clock = LeaseStore(), FakeClock()
    a, b = elector(store, "a", clock), elector(store, "b", clock)
    a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    assert a.release() and not a.is_leader
    assert store.lease is not None and store.lease["spec"]["holderIdentity"] == ""
    assert b.try_acquire_or_renew(), "no need to wait out the lease duration"


def test_two_candidates_racing_on_a_stale_read_cannot_both_win() -> None:
    store, clock = LeaseStore(), FakeClock()
    a, b = elector(store, "a", clock), elector(store, "b", clock)
    a.try_acquire_or_renew()
    a.release()
    stale = store.get(None, "lock", "ns")  # what b read just before a took it back
    assert a.try_acquire_or_renew()
    store.get = lambda *args: copy.deepcopy(stale)  # type: ignore[method-assign]
    assert not b.try_acquire_or_renew(), "the write on a stale resourceVersion conflicts"
    assert not b.is_leader


class HangingStore(LeaseStore):
    """After ``hang()``, every request blocks until the deadline it was given (a server
    that stops answering, met by the client's cut-down socket timeouts)."""

    def __init__(self) -> None:
        super().__init__()
        self.hanging = False

    def get(self, kind: Any, name: str, namespace: str) -> dict[str, Any]:
        if self.hanging:
            time.sleep(max(0.0, self.deadlines[-1] - time.monotonic()))
            raise TransportError("read timed out")
        return super().get(kind, name, namespace)


def test_renewal_against_a_silent_server_ends_by_the_renew_deadline() -> None:
    store = HangingStore()
    config = LeaderElectionConfig(
        namespace="ns", name="lock", identity="a", lease_duration=1.5, renew_deadline=1,
        retry_period=0.2,
    )  # fmt: skip
    a = LeaseElector(store, config, clock=SystemClock())  # type: ignore[arg-type]
    assert a.try_acquire_or_renew() and a.valid()
    renewed_at = time.monotonic()
    store.hanging = True
    outcome: list[bool] = []
    holder = threading.Thread(target=lambda: outcome.append(a.hold(threading.Event())))
    holder.start()
    # The last moment valid() was seen true, taken before the call that said so: on a
    # loaded machine this loop may wake late, which only thins the samples, never moves
    # one past the deadline unless valid() itself said true too late.
    last_valid = 0.0
    while True:
        before = time.monotonic()
        if not a.valid():
            break
        last_valid = before - renewed_at
        time.sleep(0.005)
    holder.join(5)
    assert not holder.is_alive(), "the renewal against a silent server never ended"
    assert outcome == [False] and not a.is_leader
    assert last_valid <= config.renew_deadline, "no acting past the renew deadline"
    # Every request of the renewal was bounded by the leadership's own end.
    assert all(d <= a.leading_until + 1e-6 for d in store.deadlines[1:])


def test_hold_keeps_renewing_until_told_to_stop() -> None:
    store, clock = LeaseStore(), SystemClock()
    config = LeaderElectionConfig(
        namespace="ns",
        name="lock",
        identity="a",
        # A lease of seconds, not tenths: on a loaded CI machine (four workers on two
        # cores) a thread went unscheduled for longer than a 0.6 s lease.
        lease_duration=2.0,
        renew_deadline=1.2,
        retry_period=0.1,
    )
    a = LeaseElector(store, config, clock=clock)  # type: ignore[arg-type]
    assert a.try_acquire_or_renew()
    until = threading.Event()
    timer = threading.Timer(2.5, until.set)  # longer than the lease itself
    timer.start()
    assert a.hold(until), "still the leader when told to stop"
    assert a.valid() and store.version >= 10
