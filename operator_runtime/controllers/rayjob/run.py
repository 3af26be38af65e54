"""What every step of a RayJob pass works with.

``JobTools`` holds the controller's injected dependencies; a ``JobRun`` is one pass
over one RayJob: the object as last read or written (``raw``), its parsed model, and
``status``, the working copy of the status that the states change. The pass ends by
writing ``status`` if a reader would see a difference (``controller.py``).

Status is kept as the JSON the API server stores (camelCase keys, RFC 3339 times);
an unset field is an absent key, as Go's ``omitempty`` leaves it.
"""

from __future__ import annotations

import copy
import datetime
import random
from dataclasses import dataclass
from typing import Any, Final

from operator_runtime.api import RayJob
from operator_runtime.api.rayjob import (
    JobDeploymentStatus,
    JobFailedReason,
    is_job_deployment_status,
)
from operator_runtime.api.reasons import Action, JobReason
from operator_runtime.controllers.dashboards import Dashboards
from operator_runtime.controllers.permissions import declarer
from operator_runtime.controllers.rayjob.metrics import JobMetrics
from operator_runtime.controllers.rayjob.options import RayJobOptions
from operator_runtime.controllers.suffix import suffixed
from operator_runtime.runtime.cache import Cache
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.clock import Clock, format_time, parse_time
from operator_runtime.runtime.events import EventRecorder, EventType
from operator_runtime.runtime.kinds import Object
from operator_runtime.runtime.reconcile import ObjectKey

CONTROLLER: Final = "rayjob"
"""The controller's name in the permission table (render/operator_permissions.py)."""
need: Final = declarer(CONTROLLER)


@dataclass(frozen=True, slots=True)
class JobCaches:
    jobs: Cache
    clusters: Cache
    services: Cache
    submitters: Cache
    """batch Jobs created by the operator."""
    pods: Cache
    """Ray pods (the head, for SidecarMode): the RayCluster controller's cache."""
    pod_groups: Cache | None = None
    """Volcano's PodGroups (``--batch-scheduler=volcano`` only)."""


@dataclass(frozen=True, slots=True)
class JobTools:
    client: KubeClient
    caches: JobCaches
    events: EventRecorder
    clock: Clock
    options: RayJobOptions
    metrics: JobMetrics
    dashboards: Dashboards
    rng: random.Random

    def suffixed(self, name: str) -> str:
        """``<name>-<rand5>``: KubeRay's generated cluster names and job ids."""
        return suffixed(self.rng, name)


@dataclass(slots=True)
class JobRun:
    tools: JobTools
    key: ObjectKey
    raw: Object
    """The RayJob as last read (cache) or written (a finalizer patch returns it)."""
    job: RayJob
    status: dict[str, Any]
    """The working copy of ``raw["status"]``."""

    @classmethod
    def start(cls, tools: JobTools, key: ObjectKey, raw: Object, job: RayJob) -> JobRun:
        return cls(tools, key, raw, job, copy.deepcopy(raw.get("status") or {}))

    @property
    def namespace(self) -> str:
        return self.key.namespace

    @property
    def name(self) -> str:
        return self.key.name

    @property
    def uid(self) -> str:
        return str(self.raw["metadata"].get("uid") or "")

    @property
    def mode(self) -> str:
        return self.job.spec.submission_mode

    @property
    def selector_mode(self) -> bool:
        """Runs on a cluster someone else made (``clusterSelector``)."""
        return bool(self.job.spec.cluster_selector)

    @property
    def has_submitter(self) -> bool:
        return self.mode in ("K8sJobMode", "SidecarMode")

    def now(self) -> datetime.datetime:
        return self.tools.clock.now()

    def get(self, field: str) -> Any:
        return self.status.get(field)

    def set(self, field: str, value: Any) -> None:
        """Set a status field; "", None, {} unset it (``omitempty``)."""
        if value in (None, "", {}):
            self.status.pop(field, None)
        else:
            self.status[field] = value

    def set_time(self, field: str, moment: datetime.datetime | None) -> None:
        self.set(field, format_time(moment) if moment is not None else None)

    def time(self, field: str) -> datetime.datetime | None:
        return parse_time(self.status.get(field))

    @property
    def state(self) -> JobDeploymentStatus | None:
        """``jobDeploymentStatus``, "" when unset; None for a value KubeRay never writes."""
        value = self.status.get("jobDeploymentStatus") or ""
        return value if is_job_deployment_status(value) else None

    def set_state(self, state: JobDeploymentStatus) -> None:
        """Set ``jobDeploymentStatus``; "" (New) unsets it."""
        self.set("jobDeploymentStatus", state)

    def fail(
        self,
        reason: JobFailedReason,
        message: str | None,
        *,
        deployment: JobDeploymentStatus = "Failed",
    ) -> None:
        """Move to ``deployment`` (Failed) with a reason; ``message=None`` keeps it."""
        self.set_state(deployment)
        self.set("reason", reason)
        if message is not None:
            self.set("message", message)

    def event(self, type_: EventType, reason: JobReason, note: str, action: Action) -> None:
        self.tools.events.record(self.raw, type_, reason.value, note, action.value)

    def cached_cluster(self) -> Object | None:
        name = self.get("rayClusterName")
        return self.tools.caches.clusters.get(self.namespace, str(name)) if name else None


def epoch_ms(value: int | None) -> str | None:
    """A Ray timestamp (epoch milliseconds) as a status time; 0 or None is unset."""
    if not value:
        return None
    return format_time(datetime.datetime.fromtimestamp(value / 1000, tz=datetime.UTC))
