"""Leader election on a coordination.k8s.io/v1 Lease.

Why not ``kubernetes.leaderelection`` (checked in kubernetes 37.0.2): it cannot be
stopped (its acquire and renew loops sleep in ``while True``), has no release on
shutdown, reads ``time.time()`` directly so tests cannot inject a clock, and goes
through the generated model objects. Release matters: on SIGTERM we hand the Lease
back (empty holder, 1 s duration, as client-go's ``ReleaseOnCancel``) so a standby
takes over at once instead of after the lease duration.

The protocol is client-go's: a candidate may take the Lease when it has no holder,
or when the record it observed has not changed for ``leaseDurationSeconds`` measured
on its *own* monotonic clock (so clocks of different machines need not agree).
Every write is conditional on resourceVersion, so two candidates cannot both win.
The leader renews every ``retry_period``; if it cannot renew within
``renew_deadline`` it has lost leadership and must stop acting.

Time bounds, because a standby may take the Lease ``lease_duration`` after the last
renewal it saw: leadership is valid until ``renew_deadline`` after the start of the
last successful renewal (``leading_until``, never later than the standby could act),
and each renewal is one attempt through ``KubeClient.bounded`` that ends by then,
never the client's retries with their 30 s timeouts and Retry-After waits. ``valid()``
is what the manager asks before dispatching a key and before every write.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.clock import Clock, SystemClock, format_micro_time
from operator_runtime.runtime.errors import ApiError, Conflict, NotFound
from operator_runtime.runtime.kinds import LEASE, Object

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LeaderElectionConfig:
    namespace: str
    name: str
    identity: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if not self.retry_period < self.renew_deadline < self.lease_duration:
            raise ValueError("need retry_period < renew_deadline < lease_duration")


class LeaseElector:
    """One candidate. ``acquire`` blocks until leading; ``hold`` renews until lost."""

    def __init__(
        self, client: KubeClient, config: LeaderElectionConfig, *, clock: Clock | None = None
    ) -> None:
        self._client = client
        self.config = config
        self._clock = clock or SystemClock()
        self._observed: dict[str, Any] | None = None
        self._observed_at = 0.0
        self._wake = threading.Event()
        self.is_leader = False
        self.leading_until = 0.0
        """Monotonic time until which this candidate may act as leader."""

    def valid(self) -> bool:
        """Leading, and the last renewal is recent enough that no standby can have
        taken over yet. Safe to call from any thread."""
        return self.is_leader and self._clock.monotonic() < self.leading_until

    def poke(self) -> None:
        """The Lease changed (seen by a watch): re-check now instead of at the next
        retry period, which makes failover after a release nearly instant."""
        self._wake.set()

    def try_acquire_or_renew(self, deadline: float | None = None) -> bool:
        """One attempt, over by ``deadline`` (monotonic; default one renew deadline
        from now); True when this candidate holds the Lease afterwards."""
        cfg = self.config
        started = self._clock.monotonic()
        client = self._client.bounded(
            started + cfg.renew_deadline if deadline is None else deadline
        )
        now = format_micro_time(self._clock.now())
        try:
            lease = client.get(LEASE, cfg.name, cfg.namespace)
        except NotFound:
            spec = self._spec(holder=cfg.identity, acquired=now, renewed=now, transitions=0)
            return self._write(
                started,
                lambda: client.create({
                    "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": cfg.name, "namespace": cfg.namespace}, "spec": spec,
                }),
            )  # fmt: skip
        except ApiError as exc:
            log.info("cannot read lease %s/%s: %s", cfg.namespace, cfg.name, exc)
            return False
        spec = dict(lease.get("spec") or {})
        if spec != self._observed:
            self._observed, self._observed_at = spec, self._clock.monotonic()
        holder = spec.get("holderIdentity") or ""
        duration = float(spec.get("leaseDurationSeconds") or cfg.lease_duration)
        expired = self._observed_at + duration <= self._clock.monotonic()
        if holder and holder != cfg.identity and not expired:
            self.is_leader = False
            return False
        ours = holder == cfg.identity
        transitions = int(spec.get("leaseTransitions") or 0)
        new_spec = self._spec(
            holder=cfg.identity,
            acquired=spec.get("acquireTime", now) if ours else now,
            renewed=now,
            transitions=transitions if ours else transitions + 1,
        )
        return self._write(started, lambda: client.update({**lease, "spec": new_spec}))

    def _spec(self, *, holder: str, acquired: str, renewed: str, transitions: int) -> Object:
        return {
            "holderIdentity": holder, "leaseDurationSeconds": int(self.config.lease_duration),
            "acquireTime": acquired, "renewTime": renewed, "leaseTransitions": transitions,
        }  # fmt: skip

    def _write(self, started: float, write: Any) -> bool:
        try:
            written: Object = write()
        except Conflict:  # someone else wrote first (AlreadyExists is a Conflict)
            self.is_leader = False
            return False
        except ApiError as exc:
            log.info("cannot write lease: %s", exc)
            return False
        self._observed = dict(written.get("spec") or {})
        self._observed_at = self._clock.monotonic()
        # From when the renewal was *sent*: the standby's lease clock starts when it
        # sees the write, which is later still.
        self.leading_until = started + self.config.renew_deadline
        self.is_leader = True
        return True

    def acquire(self, stop: threading.Event) -> bool:
        """Block until this candidate leads (True) or ``stop`` is set (False)."""
        log.info("%s waiting to lead %s/%s", self.config.identity, self.config.namespace,
                 self.config.name)  # fmt: skip
        while not stop.is_set():
            self._wake.clear()
            if self.try_acquire_or_renew():
                log.info("%s is now the leader", self.config.identity)
                return True
            self._wait_for_change(stop, self.config.retry_period)
        return False

    def hold(self, until: threading.Event) -> bool:
        """Renew every ``retry_period`` until ``until`` is set (True: still leader) or
        the Lease is lost (False): another holder wrote it, or ``leading_until``
        passed without a renewal. The caller stops acting at once on False; it also
        stops dispatching as soon as ``valid()`` turns false, even mid-renewal."""
        cfg = self.config
        last_renewed = self._clock.monotonic()
        while True:
            next_at = min(last_renewed + cfg.retry_period, self.leading_until)
            if until.wait(max(0.0, next_at - self._clock.monotonic())):
                return True
            if self._clock.monotonic() >= self.leading_until:
                break
            if self.try_acquire_or_renew(deadline=self.leading_until):
                last_renewed = self._clock.monotonic()
            elif not self.is_leader or self._clock.monotonic() >= self.leading_until:
                break
            else:  # a failed attempt: try again one retry period later
                last_renewed = self._clock.monotonic()
        log.error("%s lost the lease (not renewed within %.1fs)", cfg.identity,
                  cfg.renew_deadline)  # fmt: skip
        self.is_leader = False
        return False

    def release(self) -> bool:
        """Give the Lease back if we hold it, so a standby need not wait it out."""
        if not self.is_leader:
            return False
        cfg = self.config
        if not self.valid():  # lapsed: someone else may hold it by now
            return False
        client = self._client.bounded(self.leading_until)
        try:
            lease = client.get(LEASE, cfg.name, cfg.namespace)
            spec = dict(lease.get("spec") or {})
            if spec.get("holderIdentity") != cfg.identity:
                return False
            now = format_micro_time(self._clock.now())
            spec.update(holderIdentity="", leaseDurationSeconds=1, acquireTime=now,
                        renewTime=now)  # fmt: skip
            client.update({**lease, "spec": spec})
        except ApiError as exc:
            log.warning("could not release lease %s/%s: %s", cfg.namespace, cfg.name, exc)
            return False
        self.is_leader = False
        log.info("%s released the lease", cfg.identity)
        return True

    def _wait_for_change(self, stop: threading.Event, seconds: float) -> None:
        # Whoever sets ``stop`` also calls ``poke`` so this returns at once. Only the
        # follower waits here: the leader's own renewals would poke it in a loop.
        if not stop.is_set():
            self._wake.wait(seconds)
