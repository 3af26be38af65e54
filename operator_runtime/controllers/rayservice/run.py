"""What every step of a RayService pass works with.

``ServiceTools`` holds the controller's injected dependencies; a ``ServiceRun`` is one
pass over one RayService: the object as last read or written, its parsed model, and
``status``, the working copy of the status the steps change (camelCase JSON, as the
API server stores it). The active and pending sides are ``status["activeServiceStatus"]``
and ``status["pendingServiceStatus"]``.
"""

from __future__ import annotations

import copy
import datetime
import random
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Final

from operator_runtime.api import RayCluster, RayService
from operator_runtime.api.rayservice import RayServiceConditionType
from operator_runtime.api.reasons import Action
from operator_runtime.controllers import conditions
from operator_runtime.controllers.dashboards import Dashboards
from operator_runtime.controllers.permissions import declarer
from operator_runtime.controllers.rayservice.metrics import ServiceMetrics
from operator_runtime.controllers.rayservice.options import (
    SERVE_CONFIG_CACHE_SIZE,
    RayServiceOptions,
)
from operator_runtime.controllers.suffix import suffixed
from operator_runtime.render import (
    cluster_serve_port,
    cluster_spec_hash,
    incremental_upgrade_enabled,
)
from operator_runtime.runtime.cache import Cache
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.clock import Clock, format_time
from operator_runtime.runtime.events import EventRecorder, EventType
from operator_runtime.runtime.kinds import Object
from operator_runtime.runtime.reconcile import ObjectKey

CONTROLLER: Final = "rayservice"
ACTIVE: Final = "activeServiceStatus"
PENDING: Final = "pendingServiceStatus"


need: Final = declarer(CONTROLLER)


class ServeConfigCache:
    """The serve config last PUT to each cluster of each RayService (KubeRay's LRU of
    1000 RayServices). Unlike KubeRay's, it decides nothing: what a cluster was given
    is recorded on the cluster (``serve.given_config``), and a miss here (a restart,
    more RayServices than the cache holds) only means reading that record."""

    def __init__(self, size: int = SERVE_CONFIG_CACHE_SIZE) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, dict[str, str]] = OrderedDict()

    def get(self, service: str, cluster: str) -> str:
        with self._lock:
            configs = self._entries.get(service)
            if configs is None:
                return ""
            self._entries.move_to_end(service)
            return configs.get(cluster, "")

    def put(self, service: str, cluster: str, config: str) -> None:
        if not config:
            return
        with self._lock:
            self._entries.setdefault(service, {})[cluster] = config
            self._entries.move_to_end(service)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)

    def keep_only(self, service: str, clusters: set[str]) -> None:
        with self._lock:
            configs = self._entries.get(service)
            if configs is not None:
                for name in [n for n in configs if n not in clusters]:
                    del configs[name]

    def forget(self, service: str) -> None:
        with self._lock:
            self._entries.pop(service, None)


@dataclass(frozen=True, slots=True)
class ServiceCaches:
    rayservices: Cache
    clusters: Cache
    services: Cache
    pods: Cache
    """Ray pods (the heads): the RayCluster controller's cache."""
    endpoint_slices: Cache
    """EndpointSlices of serve Services (they carry the Service's ``ray.io/serve`` label)."""


@dataclass(frozen=True, slots=True)
class ServiceTools:
    client: KubeClient
    caches: ServiceCaches
    events: EventRecorder
    clock: Clock
    options: RayServiceOptions
    metrics: ServiceMetrics
    dashboards: Dashboards
    rng: random.Random
    serve_configs: ServeConfigCache = field(default_factory=ServeConfigCache)

    def suffixed(self, name: str) -> str:
        """``<name>-<rand5>``: a new cluster's name."""
        return suffixed(self.rng, name)


@dataclass(slots=True)
class ServiceRun:
    tools: ServiceTools
    key: ObjectKey
    raw: Object
    service: RayService
    status: dict[str, Any]
    _goal_hash: str = ""
    _models: dict[tuple[str, str], RayCluster] = field(default_factory=dict)

    @classmethod
    def start(
        cls, tools: ServiceTools, key: ObjectKey, raw: Object, service: RayService
    ) -> ServiceRun:
        return cls(tools, key, raw, service, copy.deepcopy(raw.get("status") or {}))

    @property
    def namespace(self) -> str:
        return self.key.namespace

    @property
    def name(self) -> str:
        return self.key.name

    @property
    def cache_key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def incremental(self) -> bool:
        """Incremental upgrade: the gate on and ``NewClusterWithIncrementalUpgrade``."""
        return incremental_upgrade_enabled(self.service, self.tools.options.gates)

    def now(self) -> datetime.datetime:
        return self.tools.clock.now()

    def now_text(self) -> str:
        return format_time(self.now())

    def side(self, which: str) -> dict[str, Any]:
        side: dict[str, Any] = self.status.setdefault(which, {})
        return side

    def cluster_name(self, which: str) -> str:
        return str((self.status.get(which) or {}).get("rayClusterName") or "")

    @property
    def conditions(self) -> list[Object]:
        found: list[Object] = self.status.setdefault("conditions", [])
        return found

    def is_true(self, type_: RayServiceConditionType) -> bool:
        return conditions.is_true(self.status.get("conditions") or [], type_)

    def condition(self, type_: RayServiceConditionType) -> Object | None:
        return conditions.find(self.status.get("conditions") or [], type_)

    def set_condition(
        self, type_: RayServiceConditionType, status: str, reason: str, message: str
    ) -> None:
        conditions.set_condition(
            self.conditions,
            type_,
            status,
            reason,
            message,
            self.now_text(),
            observed_generation=int(self.status.get("observedGeneration") or 0),
        )

    def remove_condition(self, type_: RayServiceConditionType) -> None:
        conditions.remove_condition(self.conditions, type_)

    def event(self, type_: EventType, reason: str, note: str, action: Action) -> None:
        self.tools.events.record(self.raw, type_, reason, note, action.value)

    @property
    def goal_hash(self) -> str:
        """The hash of ``rayClusterConfig`` (one JSON dump and SHA-1, asked for several
        times a pass: computed once)."""
        if not self._goal_hash:
            self._goal_hash = cluster_spec_hash(self.service.spec.ray_cluster_config)
        return self._goal_hash

    def cluster_model(self, cluster: Object) -> RayCluster:
        """``cluster`` parsed once per pass and resourceVersion (the serve port, the
        partial hash and the Services each need the model)."""
        metadata = cluster.get("metadata") or {}
        key = (str(metadata.get("name")), str(metadata.get("resourceVersion")))
        model = self._models.get(key)
        if model is None:
            model = self._models[key] = RayCluster.model_validate(cluster)
        return model

    def serve_port(self, cluster: Object) -> int:
        """The head container's port named "serve", else 8000 (from the cluster's spec: the
        pod cache keeps no ports)."""
        return cluster_serve_port(self.cluster_model(cluster))

    def cluster(self, name: str) -> Object | None:
        return self.tools.caches.clusters.get(self.namespace, name) if name else None
