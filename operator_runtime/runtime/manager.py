"""The manager: informers -> handlers -> work queues -> workers -> reconcilers.

Lifecycle of ``run``:

1. serve ``/metrics``, ``/healthz`` and ``/readyz``; start every informer (all replicas
   keep warm caches, so a standby is ready the moment it leads);
2. with leader election, block until this process holds the Lease;
3. wait for the caches to sync, then start ``concurrency`` workers per controller;
4. until ``stop`` is set (SIGTERM) or the Lease is lost: work;
5. shut down: stop intake (queues refuse new keys), let in-flight reconciles finish
   (up to ``shutdown_timeout``) while still renewing the Lease, flush events, then
   release the Lease so a standby takes over at once, stop informers and servers.
   Exit code 0.

Losing the Lease is different: the moment it is not renewed within the renew deadline
(``LeaseElector.valid()`` turns false) no key is dispatched and every write is refused
by the client's write gate, even one a running reconcile is about to make; ``run``
returns 1 without draining (worker threads are daemons) and the process restarts
rather than keep acting without the Lease.

Concurrency is threads over the synchronous client (see docs/architecture.md).
"""

from __future__ import annotations

import logging
import os
import threading
import time
import traceback
import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Final

from prometheus_client import CollectorRegistry

from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.clock import Clock, SystemClock
from operator_runtime.runtime.configuration import OperatorConfiguration
from operator_runtime.runtime.context import ControllerContext, InformerSet
from operator_runtime.runtime.errors import ApiError, Conflict, PermanentError, TemporaryError
from operator_runtime.runtime.events import ApiEventSink, AsyncEventSink, EventRecorder
from operator_runtime.runtime.health import HttpEndpoint, checks_route, parse_address
from operator_runtime.runtime.informer import (
    WATCH_INACTIVITY_TIMEOUT,
    EventType,
    Handler,
    Informer,
)
from operator_runtime.runtime.kinds import LEASE, Object
from operator_runtime.runtime.leader import LeaderElectionConfig, LeaseElector
from operator_runtime.runtime.metrics import RuntimeMetrics
from operator_runtime.runtime.reconcile import Controller, ObjectKey, Watch
from operator_runtime.runtime.registry import ControllerRegistry
from operator_runtime.runtime.settings import OperatorEnvironment
from operator_runtime.runtime.transport import ApiServerAccess
from operator_runtime.runtime.workqueue import WorkQueue

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ManagerOptions:
    namespaces: tuple[str, ...] = ()
    concurrency: int = 1
    leader_election: LeaderElectionConfig | None = None
    metrics_address: str = ":8080"
    health_address: str = ":8082"
    shutdown_timeout: float = 30.0
    identity: str = ""
    feature_gates: tuple[tuple[str, bool], ...] = ()
    watch_inactivity_timeout: float = WATCH_INACTIVITY_TIMEOUT
    """A watch silent (no event, no bookmark) this long is treated as dead and reopened."""
    use_kubernetes_proxy: bool = False
    """Reach Ray dashboards through the API server's service proxy."""
    api_server: ApiServerAccess | None = None
    """How to reach the API server with another HTTP client (the proxy mode needs it)."""
    settings: OperatorEnvironment = field(default_factory=OperatorEnvironment.defaults)
    """KubeRay's environment variables, handed to every controller."""
    enable_metrics: bool = True
    """Controllers add their ``kuberay_*`` collectors to ``/metrics`` (KubeRay's
    ``--enable-metrics``; the command line's default is false, as KubeRay's)."""
    configuration: OperatorConfiguration = field(default_factory=OperatorConfiguration)
    """KubeRay's ``Configuration``: what controllers add to every Ray pod."""


class _Runner:
    """One controller with its queue and workers."""

    def __init__(self, controller: Controller, queue: WorkQueue[ObjectKey]) -> None:
        self.controller = controller
        self.queue = queue
        self.threads: list[threading.Thread] = []


class Manager:
    def __init__(
        self,
        client: KubeClient,
        options: ManagerOptions,
        *,
        metrics: RuntimeMetrics | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.options = options
        self.clock = clock or SystemClock()
        self.metrics = metrics or RuntimeMetrics(CollectorRegistry())
        self.identity = options.identity or f"ray-operator-{uuid.uuid4().hex[:10]}"
        self.informers = InformerSet(
            client, namespaces=options.namespaces, on_restart=self.metrics.observe_watch_restart,
            inactivity_timeout=options.watch_inactivity_timeout,
        )  # fmt: skip
        # Events get a token bucket of their own (client-go's event client has one too):
        # a burst of them must not delay the creates the controllers wait for. (Unit
        # tests hand in stand-ins for the client; those are used as they are.)
        events_client = client.with_own_limiter() if isinstance(client, KubeClient) else client
        self._event_sink = AsyncEventSink(
            ApiEventSink(events_client, controller="ray.io/ray-operator", instance=self.identity)
        )
        self._recorders: dict[str, EventRecorder] = {}
        self._runners: list[_Runner] = []
        self._elector: LeaseElector | None = None
        self._lease_informer: Informer | None = None
        self.endpoints: dict[str, HttpEndpoint] = {}
        self._servers_started = False
        """The running HTTP endpoints ("health", "metrics"); ``.port`` is the bound port."""
        self.lost_leadership = False
        self.leading = threading.Event()
        self._release = threading.Event()
        """Set once the drain is over: the renew loop may stop and the Lease go back."""

    # -- assembly ---------------------------------------------------------------------

    def context(self) -> ControllerContext:
        return ControllerContext(
            client=self.client, informers=self.informers, clock=self.clock,
            events=self.recorder, feature_gates=dict(self.options.feature_gates),
            namespaces=self.options.namespaces, metrics_registry=self.metrics.registry,
            use_kubernetes_proxy=self.options.use_kubernetes_proxy,
            api_server=self.options.api_server, settings=self.options.settings,
            enable_metrics=self.options.enable_metrics,
            configuration=self.options.configuration,
        )  # fmt: skip

    def recorder(self, controller: str) -> EventRecorder:
        if controller not in self._recorders:
            self._recorders[controller] = EventRecorder(
                self._event_sink, clock=self.clock, on_dropped=self.metrics.events_dropped.inc
            )
        return self._recorders[controller]

    def add_registry(
        self, registry: ControllerRegistry, only: Collection[str] | None = None
    ) -> None:
        for controller in registry.build(self.context(), only):
            self.add(controller)

    def add(self, controller: Controller) -> None:
        queue: WorkQueue[ObjectKey] = WorkQueue(
            clock=self.clock, metrics=self.metrics.queue(controller.name),
            on_trigger=self.metrics.triggers(controller.name),
        )  # fmt: skip
        for watch in controller.watches():
            informer = self.informers.get(
                watch.kind, label_selector=watch.label_selector, projection=watch.projection
            )
            informer.add_handler(_enqueuer(watch, queue))
        # Optional: a controller with work of its own beside its passes (queued pod
        # creates) starts a pass when that work is done, instead of polling for it, and
        # may put off a pass that an event cannot make urgent.
        bind = getattr(controller, "bind_queue", None)
        if callable(bind):
            bind(queue)
        self._runners.append(_Runner(controller, queue))

    # -- running ----------------------------------------------------------------------

    def ready(self) -> bool:
        return self.informers.synced()

    def start_servers(self) -> None:
        """Bind and serve /healthz, /readyz and /metrics (once; ``run`` calls it too).
        A port in use or an address that is not ``[host]:port`` raises ``OSError`` or
        ``ValueError`` whose message names the address."""
        if self._servers_started:
            return
        route = checks_route({"informers": self.ready})
        alive = checks_route({"manager": lambda: True})
        wanted = (
            ("health", self.options.health_address, {"/healthz": alive, "/readyz": route}),
            ("metrics", self.options.metrics_address, {"/metrics": self._metrics_route}),
        )
        for name, address, routes in wanted:
            try:
                bound = parse_address(address)
            except ValueError:
                raise ValueError(f"{name} address {address!r} is not [host]:port") from None
            if bound is None:
                continue
            try:
                self.endpoints[name] = HttpEndpoint(bound, routes)
            except OSError as exc:
                self._close_servers()
                reason = exc.strerror or str(exc)
                raise OSError(f"cannot listen on {address} ({name}): {reason}") from None
        for server in self.endpoints.values():
            server.start()
        self._servers_started = True

    def _close_servers(self) -> None:
        for server in self.endpoints.values():
            server.close()
        self.endpoints.clear()

    def _metrics_route(self) -> tuple[int, str, bytes]:
        for informer in self.informers.all():
            self.metrics.cached_objects.labels(informer.kind.kind).set(len(informer.cache))
        content_type, body = self.metrics.exposition()
        return 200, content_type, body

    def run(self, stop: threading.Event) -> int:
        """Run until ``stop`` is set; return the process exit code."""
        self.start_servers()
        self.informers.start()
        holder: threading.Thread | None = None
        try:
            if self.options.leader_election is not None:
                if not self._acquire(self.options.leader_election, stop):
                    return 0
                # The write gate makes a reconcile still running when the Lease lapses
                # fail its next write instead of acting beside a new leader.
                self.client.set_write_gate(self._may_act)
                # A daemon: it may be stuck in a request when the Lease lapses (an exec
                # plugin that hangs), and the process must exit all the same.
                holder = threading.Thread(target=self._hold, args=(stop,), name="lease-renew",
                                          daemon=True)  # fmt: skip
                holder.start()
            self.leading.set()
            self.metrics.leader.labels(self._lease_name).set(1)
            while not self.informers.synced() and not stop.wait(0.05):
                pass
            if not stop.is_set():
                self._start_workers()
                log.info("started %d controller(s): %s", len(self._runners),
                         ", ".join(r.controller.name for r in self._runners))  # fmt: skip
            # The renewal thread reports a lost Lease, unless a request holds it past
            # the renew deadline: then this loop sees the lapse and stops the process.
            while not stop.wait(0.1 if holder is not None else None):
                if self._elector is not None and not self._elector.valid():
                    log.error("the Lease was not renewed within the renew deadline")
                    self._lose_lease(stop)
        finally:
            self._shutdown(holder)
        return 1 if self.lost_leadership else 0

    @property
    def _lease_name(self) -> str:
        election = self.options.leader_election
        return election.name if election is not None else self.identity

    def _acquire(self, config: LeaderElectionConfig, stop: threading.Event) -> bool:
        elector = LeaseElector(self.client, config, clock=self.clock)
        self._elector = elector
        # Watching the one Lease lets a standby react to a release within one event
        # instead of one retry period.
        self._lease_informer = Informer(
            self.client, LEASE, namespaces=(config.namespace,),
            field_selector=f"metadata.name={config.name}",
            on_restart=self.metrics.observe_watch_restart,
        )  # fmt: skip
        self._lease_informer.add_handler(lambda *_: elector.poke())
        self._lease_informer.start()

        def wake_on_stop() -> None:
            stop.wait()
            elector.poke()

        threading.Thread(target=wake_on_stop, name="lease-wake", daemon=True).start()
        return elector.acquire(stop)

    def _may_act(self) -> bool:
        return self._elector is None or self._elector.valid()

    def _hold(self, stop: threading.Event) -> None:
        # Renews until the drain is over (``_release``), not merely until ``stop``: a
        # reconcile finishing after SIGTERM must still be the only one acting.
        assert self._elector is not None
        try:
            held = self._elector.hold(self._release)
        except Exception:
            # Whatever ended the renewals, the Lease is no longer renewed: stop acting
            # and exit non-zero, never linger neither leading nor exiting.
            log.exception("the Lease renewal failed")
            held = False
        if not held:
            self._lose_lease(stop)

    def _lose_lease(self, stop: threading.Event) -> None:
        self.lost_leadership = True
        self.metrics.leader.labels(self._lease_name).set(0)
        for runner in self._runners:
            runner.queue.shut_down()
        stop.set()

    def _start_workers(self) -> None:
        for runner in self._runners:
            self.metrics.controller_started(runner.controller.name)
            for index in range(max(1, self.options.concurrency)):
                # Daemons: after losing the Lease the process exits without waiting
                # for a reconcile stuck in a call (its writes are refused anyway).
                thread = threading.Thread(
                    target=self._work, args=(runner,),
                    name=f"{runner.controller.name}-worker-{index}", daemon=True,
                )  # fmt: skip
                thread.start()
                runner.threads.append(thread)

    def _work(self, runner: _Runner) -> None:
        while (key := runner.queue.get()) is not None:
            try:
                if not self._may_act():
                    return  # the Lease lapsed: dispatch nothing more
                self._reconcile(runner, key)
            finally:
                runner.queue.done(key)

    def _reconcile(self, runner: _Runner, key: ObjectKey) -> None:
        name = runner.controller.name
        queue = runner.queue
        context = {"controller": name, "key": str(key), "reconcile_id": uuid.uuid4().hex[:8]}
        started, looked = time.monotonic(), self.clock.monotonic()
        self.metrics.active_workers.labels(name).inc()
        try:
            result = runner.controller.reconcile(key)
        except PermanentError as exc:
            self._count(name, "error")
            queue.forget(key)
            log.error("reconcile %s %s failed permanently: %s", name, key, exc, extra=context)
        except TemporaryError as exc:
            self._count(name, "error")
            if exc.delay is None:
                delay = queue.add_rate_limited(key)
            else:
                delay = exc.delay
                queue.add_after(key, delay)
            log.warning("reconcile %s %s will retry in %.3fs: %s", name, key, delay, exc,
                        extra=context)  # fmt: skip
        except Conflict as exc:
            self._count(name, "error")
            delay = queue.add_rate_limited(key)
            log.info("reconcile %s %s hit a conflict, retrying in %.3fs: %s", name, key,
                     delay, exc, extra=context)  # fmt: skip
        except ApiError as exc:
            # The API server's answer (a webhook down, a namespace terminating, a 5xx),
            # not a fault of ours: one line naming the request's call site, no traceback.
            self._count(name, "error")
            delay = queue.add_rate_limited(key)
            log.error("reconcile %s %s: %s (from %s); retrying in %.3fs", name, key, exc,
                      _call_site(exc), delay, extra=context)  # fmt: skip
        except Exception:
            self._count(name, "error")
            delay = queue.add_rate_limited(key)
            log.exception("reconcile %s %s raised; retrying in %.3fs", name, key, delay,
                          extra=context)  # fmt: skip
        else:
            queue.forget(key)
            if result.requeue_after is not None:
                queue.add_after(key, self._left_of(result.requeue_after, looked, started))
                self._count(name, "requeue_after")
            else:
                self._count(name, "success")
        finally:
            self.metrics.active_workers.labels(name).dec()
            self.metrics.reconcile_time.labels(name).observe(time.monotonic() - started)

    def _left_of(self, delay: float, looked: float, started: float) -> float:
        """What is left of a pass's ``requeue_after`` once it returns: all of it, as in
        client-go (a slow pass never brings itself back at once), less only how far the
        injected clock jumped during the pass beyond the real time the pass took.

        A controller computes the delay from the time it read (a RayCronJob's next
        tick); a test that moves its fake clock while the pass runs would otherwise
        find the key due a whole jump after the moment the pass asked for (a loaded
        run's simulated hour waited out its 30 s for a tick that way). On a real clock
        the jump is nil."""
        jumped = (self.clock.monotonic() - looked) - (time.monotonic() - started)
        return max(0.0, delay - max(0.0, jumped))

    def _count(self, controller: str, result: str) -> None:
        self.metrics.reconcile_total.labels(controller, result).inc()
        if result == "error":
            self.metrics.reconcile_errors.labels(controller).inc()

    def _shutdown(self, holder: threading.Thread | None) -> None:
        for runner in self._runners:
            runner.queue.shut_down()
        if not self.lost_leadership:
            log.info("shutting down: draining in-flight reconciles")
            self._drain()
        if self.lost_leadership:
            log.error("lost the leader Lease: stopping at once, without draining")
        for runner in self._runners:
            # Optional: a controller with work of its own beside its reconciles (queued
            # pod creates, pooled connections) ends it here, before the events are
            # flushed: the creates it lets finish record theirs.
            close = getattr(runner.controller, "close", None)
            if callable(close):
                close()
        if not self.lost_leadership:
            for recorder in self._recorders.values():
                recorder.flush()
            self._event_sink.close(timeout=2.0)
        self._release.set()
        if holder is not None:
            holder.join(0.0 if self.lost_leadership else None)
        if self._elector is not None and not self.lost_leadership:
            self._elector.release()
        self.metrics.leader.labels(self._lease_name).set(0)
        # Reflector threads are daemons; after a lost Lease none is waited for (one may
        # wait for the same stuck credential as the renewal).
        join = 0.0 if self.lost_leadership else 5.0
        if self._lease_informer is not None:
            self._lease_informer.stop(join)
        self.informers.stop(join)
        # Each endpoint's serve loop notices a stop within its poll interval (0.5 s):
        # stopped side by side, the process exits that much sooner, which a leader
        # that lost its Lease must do within the lease duration.
        stoppers = [threading.Thread(target=server.stop, name="endpoint-stop")
                    for server in self.endpoints.values()]  # fmt: skip
        for stopper in stoppers:
            stopper.start()
        for stopper in stoppers:
            stopper.join()
        log.info("shutdown complete")

    def _drain(self) -> None:
        """Wait for in-flight reconciles (up to ``shutdown_timeout``), giving up at once
        if the Lease is lost meanwhile."""
        deadline = time.monotonic() + self.options.shutdown_timeout
        for runner in self._runners:
            while not runner.queue.wait_idle(min(0.1, max(0.0, deadline - time.monotonic()))):
                if self.lost_leadership:
                    return
                if time.monotonic() >= deadline:
                    log.warning("%s: reconciles still running at the shutdown deadline",
                                runner.controller.name)  # fmt: skip
                    break
            for thread in runner.threads:
                thread.join(max(0.0, deadline - time.monotonic()))

    @property
    def controllers(self) -> Sequence[Controller]:
        return [runner.controller for runner in self._runners]


def _enqueuer(watch: Watch, queue: WorkQueue[ObjectKey]) -> Handler:
    sources = {event: f"{watch.kind.kind}/{event}" for event in ("ADDED", "MODIFIED", "DELETED")}

    def handle(event: EventType, obj: Object, old: Object | None) -> None:
        if watch.predicate is not None and not watch.predicate(event, obj, old):
            return
        keys = set(watch.to_keys(obj))
        if old is not None and event == "MODIFIED":
            keys.update(watch.to_keys(old))  # e.g. an owner reference that was removed
        for key in keys:
            queue.add(key, sources[event])

    return handle


_RUNTIME_PACKAGE: Final = os.path.dirname(os.path.abspath(__file__))


def _call_site(error: BaseException) -> str:
    """The controller's frame that made the failed request: the innermost frame outside
    this runtime package (its client and transport), as ``file:line function``."""
    frames = [
        frame
        for frame in traceback.extract_tb(error.__traceback__)
        if os.path.dirname(frame.filename) != _RUNTIME_PACKAGE
    ]
    if not frames:
        return "the runtime"
    frame = frames[-1]
    return f"{os.path.basename(frame.filename)}:{frame.lineno} {frame.name}"
