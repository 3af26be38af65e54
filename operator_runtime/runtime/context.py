"""What a controller receives when it is built: shared informers, the client, an
event recorder, a clock, expectations and the operator's settings. Everything is
injected here, so a controller has no globals and tests can hand it fakes.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry

from operator_runtime.runtime.cache import Cache, IndexFunc, Projection, strip_managed_fields
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.clock import Clock
from operator_runtime.runtime.configuration import OperatorConfiguration
from operator_runtime.runtime.events import EventRecorder
from operator_runtime.runtime.expectations import Expectations, timeout_for
from operator_runtime.runtime.informer import WATCH_INACTIVITY_TIMEOUT, Informer, RestartObserver
from operator_runtime.runtime.kinds import ResourceKind
from operator_runtime.runtime.settings import OperatorEnvironment
from operator_runtime.runtime.transport import ApiServerAccess


class InformerSet:
    """Informers shared by all controllers: one per (kind, label selector, field selector).

    Two controllers watching pods with the same selector share one watch and one cache.
    The first registration fixes the projection; asking for the same informer with a
    different projection is a programming error, reported at start-up.
    """

    def __init__(
        self,
        client: KubeClient,
        *,
        namespaces: tuple[str, ...] = (),
        inactivity_timeout: float = WATCH_INACTIVITY_TIMEOUT,
        on_restart: RestartObserver | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self._client = client
        self._namespaces = namespaces
        self._inactivity_timeout = inactivity_timeout
        self._on_restart = on_restart
        self._rng = rng or random.Random()
        self._lock = threading.Lock()
        self._informers: dict[tuple[ResourceKind, str | None, str | None], Informer] = {}
        self._projections: dict[tuple[ResourceKind, str | None, str | None], Projection] = {}
        self._started = False

    def get(
        self,
        kind: ResourceKind,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        projection: Projection | None = None,
        indexers: Mapping[str, IndexFunc] | None = None,
    ) -> Informer:
        key = (kind, label_selector, field_selector)
        with self._lock:
            informer = self._informers.get(key)
            if informer is not None:
                if projection is not None and projection is not self._projections[key]:
                    raise ValueError(f"{kind} ({label_selector}) registered twice with "
                                     "different projections")  # fmt: skip
                return informer
            chosen = projection or strip_managed_fields
            informer = Informer(
                self._client, kind, namespaces=self._namespaces,
                label_selector=label_selector, field_selector=field_selector,
                projection=chosen, indexers=indexers,
                inactivity_timeout=self._inactivity_timeout, on_restart=self._on_restart,
                rng=random.Random(self._rng.random()),
            )  # fmt: skip
            self._informers[key] = informer
            self._projections[key] = chosen
            if self._started:
                informer.start()
            return informer

    @property
    def inactivity_timeout(self) -> float:
        """How long a silent watch lasts before it is presumed stalled and reopened."""
        return self._inactivity_timeout

    def cache(self, kind: ResourceKind, *, label_selector: str | None = None) -> Cache:
        return self.get(kind, label_selector=label_selector).cache

    def all(self) -> list[Informer]:
        with self._lock:
            return list(self._informers.values())

    def start(self) -> None:
        with self._lock:
            self._started = True
            informers = list(self._informers.values())
        for informer in informers:
            informer.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop every informer, waiting up to ``timeout`` for each reflector thread."""
        for informer in self.all():
            informer.stop(timeout)

    def synced(self) -> bool:
        return all(informer.has_synced() for informer in self.all())


@dataclass
class ControllerContext:
    """Handed to each controller factory."""

    client: KubeClient
    informers: InformerSet
    clock: Clock
    events: Callable[[str], EventRecorder]
    """Returns the event recorder for a controller name."""
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    namespaces: tuple[str, ...] = ()
    metrics_registry: CollectorRegistry | None = None
    """The registry ``/metrics`` serves; controllers add their own collectors to it."""
    use_kubernetes_proxy: bool = False
    """``--use-kubernetes-proxy``: reach Ray heads through the API server's proxy."""
    api_server: ApiServerAccess | None = None
    """The API server's URL, TLS and credentials (needed with ``use_kubernetes_proxy``)."""
    settings: OperatorEnvironment = field(default_factory=OperatorEnvironment.defaults)
    """KubeRay's environment variables, read once by ``main``; KubeRay's defaults here."""
    enable_metrics: bool = True
    """``--enable-metrics``: controllers register their ``kuberay_*`` collectors."""
    configuration: OperatorConfiguration = field(default_factory=OperatorConfiguration)
    """KubeRay's ``Configuration`` (``--config`` or the flags): controllers read the
    sidecars, default env vars, labels and annotations it adds to Ray pods."""

    def caches(self, watched: Mapping[str, tuple[ResourceKind, str | None]]) -> dict[str, Cache]:
        """The cache of each informer a controller reads, by the name it gives it:
        ``watched`` maps a name to its kind and label selector (none: every object)."""
        return {
            name: self.informers.get(kind, label_selector=selector).cache
            for name, (kind, selector) in watched.items()
        }

    def expectations(self, timeout: float | None = None) -> Expectations:
        """Scale expectations whose timeout is never shorter than these informers'
        stall detection plus a relist (``expectations.timeout_for``): an event held up
        by a stalled watch must arrive before the expectation gives up, or the
        controller acts on a cache that misses its own create."""
        floor = timeout_for(self.informers.inactivity_timeout)
        return Expectations(clock=self.clock, timeout=max(timeout or floor, floor))
