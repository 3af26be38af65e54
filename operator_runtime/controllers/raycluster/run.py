"""What every step of a RayCluster reconcile works with.

``ClusterTools`` holds the controller's injected dependencies (built once); a
``ClusterRun`` is one pass over one cluster: the cached object, its parsed model
and the outcome of the pod step, which the status step reads. Steps are plain
functions of a ``ClusterRun``; they read from the caches and write through the
client, so a step never sees a different world than the one before it.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, cast

from operator_runtime.api import JSONObject, RayCluster
from operator_runtime.api.labels import LabelKey, NodeType
from operator_runtime.api.reasons import Action, Reason
from operator_runtime.controllers.permissions import declarer
from operator_runtime.controllers.raycluster.metrics import ClusterMetrics
from operator_runtime.controllers.raycluster.options import POD_CREATES_PER_PASS, RayClusterOptions
from operator_runtime.controllers.workloadscheduling import SchedulingCaches
from operator_runtime.runtime.cache import BY_OWNER_UID, Cache
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.clock import Clock
from operator_runtime.runtime.events import EventRecorder, EventType
from operator_runtime.runtime.expectations import Expectations
from operator_runtime.runtime.kinds import Object
from operator_runtime.runtime.reconcile import ObjectKey, Result, controlled_by

if TYPE_CHECKING:
    from operator_runtime.controllers.raycluster.creates import CreateQueue

CONTROLLER: Final = "raycluster"
"""The controller's name in the permission table (render/operator_permissions.py)."""


def group_key(namespace: str, cluster: str, group: str) -> str:
    """The key of a cluster's pod group in the expectations and the create queue:
    ``ns/cluster/group``; the head group is ``""``."""
    return f"{namespace}/{cluster}/{group}"


def loose(value: JSONObject) -> Object:
    """A rendered object as the plain dict the client and caches use."""
    return cast(Object, value)


need: Final = declarer(CONTROLLER)
"""One API permission a step uses (declared next to the step, checked by a test)."""


@dataclass(frozen=True, slots=True)
class ClusterCaches:
    """The informer caches the controller reads (never the API server on hot paths)."""

    clusters: Cache
    pods: Cache
    services: Cache
    jobs: Cache
    service_accounts: Cache
    roles: Cache
    role_bindings: Cache
    ingresses: Cache
    pvcs: Cache
    pod_groups: Cache | None = None
    """The batch scheduler's PodGroups (``--batch-scheduler`` with PodGroups only)."""
    workload_scheduling: SchedulingCaches | None = None
    """The Workloads and PodGroups of ``scheduling.k8s.io`` (the KubernetesWAS gate only)."""


@dataclass(frozen=True, slots=True)
class ClusterTools:
    client: KubeClient
    caches: ClusterCaches
    events: EventRecorder
    expectations: Expectations
    creates: CreateQueue
    """Worker pod creates, run after the pass that asked for them (``creates.py``)."""
    clock: Clock
    options: RayClusterOptions
    metrics: ClusterMetrics
    rng: random.Random
    """Draws multi-host replica names (``<group>-<rand5>``)."""
    new_token: Callable[[], str]
    """A fresh auth token (KubeRay: 32 random bytes, base64)."""


@dataclass(slots=True)
class ClusterRun:
    """One pass over one RayCluster."""

    tools: ClusterTools
    key: ObjectKey
    raw: Object
    """The cached object: shared with the cache, never mutated."""
    cluster: RayCluster
    step_error: BaseException | None = None
    """The first failed resource step's error (status reflects it)."""
    notes: list[str] = field(default_factory=list)
    create_budget: int = POD_CREATES_PER_PASS
    """Pods this pass may still create (``POD_CREATES_PER_PASS``)."""
    more_to_create: bool = False
    """The budget ran out with pods still missing: look again soon."""
    waiting_on_cache: bool = False
    """A group waits for its queued creates or for the cache to show its own
    creates/deletes (their events, or the queue's wake-up, start the next pass)."""
    creates_unseen: bool = False
    """Pods this pass created or queued, or an earlier pass's creates the cache does not
    show yet: a status computed now is already out of date, and the pass that sees them
    comes by itself (their events, or the queue's wake-up)."""
    recheck_in: float | None = None
    """Seconds until the first expectation this pass waited for may lapse, or the first
    replica index hold ends: the pass looks again then, so a lost event costs one
    expectation timeout, not that plus the periodic resync. None: nothing of its own."""
    started: float = -1.0
    """When the pass began (the tools' clock's monotonic seconds); set on creation."""

    worker_renders: dict[str, JSONObject] = field(default_factory=dict)
    """Group name -> its single-host worker pod as rendered in this pass (shared by
    its creates, which only read it: ``podwrites.single_host_worker``)."""
    still_there: bool | None = None
    """``pods.still_there``'s answer, asked at most once a pass."""
    _cluster_pods: list[Object] | None = None
    """``cluster_pods`` of this pass, read once: every step sees the same pods."""

    def __post_init__(self) -> None:
        if self.started < 0:
            self.started = self.tools.clock.monotonic()

    def recheck_within(self, seconds: float | None) -> None:
        """Look again at most ``seconds`` from now (None: no deadline of its own)."""
        if seconds is not None and (self.recheck_in is None or seconds < self.recheck_in):
            self.recheck_in = seconds

    @property
    def namespace(self) -> str:
        return self.key.namespace

    @property
    def name(self) -> str:
        return self.key.name

    @property
    def uid(self) -> str:
        return str(self.raw["metadata"].get("uid") or "")

    def group_key(self, group: str) -> str:
        return group_key(self.namespace, self.name, group)

    def event(self, type_: EventType, reason: Reason, note: str, action: Action) -> None:
        self.tools.events.record(self.raw, type_, reason.value, note, action.value)

    def cluster_pods(self) -> list[Object]:
        """Every pod this cluster is the controller owner of (head and workers).

        Selected by owner UID, not by the ``ray.io/cluster`` label: anyone can label a
        pod, and a foreign pod counted as a worker would make a scale-down delete one of
        ours (or a suspend delete theirs). A namesake cluster deleted and recreated has
        a new UID, so its predecessor's pods are not ours either.

        Read once and kept (a pass used to filter the cluster's pods five times or
        more), until ``refresh_pods``: a group whose expectations were just found met
        must count pods at least as new as that check, or it would create a pod the
        check saw arrive (``podwrites.satisfied`` refreshes)."""
        if self._cluster_pods is None:
            owned = self.tools.caches.pods.by_index(BY_OWNER_UID, self.uid)
            self._cluster_pods = [p for p in owned if self.controls(p)]
        return self._cluster_pods

    def refresh_pods(self) -> None:
        """The next ``cluster_pods`` reads the cache again."""
        self._cluster_pods = None

    def head_pods(self) -> list[Object]:
        return [p for p in self.cluster_pods() if _label(p, LabelKey.NODE_TYPE) == NodeType.HEAD]

    def ray_pods(self) -> list[Object]:
        """Head and worker pods: what a suspend or a Recreate upgrade removes."""
        return [
            p
            for p in self.cluster_pods()
            if _label(p, LabelKey.NODE_TYPE) in (NodeType.HEAD, NodeType.WORKER)
        ]

    def group_pods(self, group: str) -> list[Object]:
        return [
            p
            for p in self.cluster_pods()
            if _label(p, LabelKey.NODE_TYPE) == NodeType.WORKER
            and _label(p, LabelKey.GROUP) == group
        ]

    def controls(self, obj: Object) -> bool:
        """Whether this cluster is ``obj``'s controller owner."""
        return controlled_by(obj, self.uid)


def _label(obj: Object, key: str) -> str:
    return str(((obj.get("metadata") or {}).get("labels") or {}).get(key, ""))


Step = Callable[[ClusterRun], Result | None]
"""A gate step: returns a Result to end the pass there (no status write), else None."""
ResourceStep = Callable[[ClusterRun], None]
"""A resource step: raises to stop the chain; the status still records the error."""
