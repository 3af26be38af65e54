"""The RayCronJob controller against the real control plane, on a clock the test moves.

``cron_operator`` runs our operator in-process: a runtime ``Manager`` built from the
package's own registration (``operator_runtime.controllers.register``), asked for the
``raycronjob`` controller only, so the RayJobs it creates are never started (the RayJob
controller would give each one a cluster). Their template says ``suspend: true`` too.

The manager, its work queue and its event recorder share one injected clock. With a
``FakeClock`` the controller's "now" is what the test says, and a requeue ("look again
at the next tick") comes due when the test advances the clock past it: the work queue
re-checks its delayed keys at least once a second of real time, so a tick is acted on
within about a second of the advance, without poking the object.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from hack.localcluster import LocalCluster
from operator_runtime import controllers
from operator_runtime.controllers.raycronjob.schedule import parse_time
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.clock import Clock, FakeClock
from operator_runtime.runtime.kinds import RAY_CRON_JOB, RAY_JOB, Object
from operator_runtime.runtime.manager import Manager, ManagerOptions
from operator_runtime.runtime.registry import ControllerRegistry
from tests.integration.managers import manager_running
from tests.integration.raycluster.conftest import (  # noqa: F401 (fixtures)
    container,
    events,
    gc_probe,
    make_client,
    ray_crds,
)

CONTROLLER = "raycronjob"


@pytest.fixture
def kube(ray_crds: LocalCluster) -> KubeClient:  # noqa: F811
    return make_client(ray_crds)


@dataclass
class CronOperator:
    manager: Manager
    client: KubeClient
    """The operator's own client (a test may observe its requests)."""
    built: list[str]
    """The controllers the registry built (gates applied)."""


@contextmanager
def cron_operator(
    cluster: LocalCluster,
    namespace: str,
    clock: Clock,
    *,
    gate: bool = True,
    observe: Callable[[str, str, float], None] | None = None,
) -> Iterator[CronOperator]:
    client = make_client(cluster)
    client.set_observer(observe)
    manager = Manager(
        client,
        ManagerOptions(
            namespaces=(namespace,), concurrency=1, metrics_address="0", health_address="0",
            feature_gates=(("RayCronJob", gate),), shutdown_timeout=10,
        ),
        clock=clock,
    )  # fmt: skip
    registry = ControllerRegistry()
    controllers.register(registry)
    built = registry.build(manager.context(), [CONTROLLER])
    for controller in built:
        manager.add(controller)
    with manager_running(manager):
        yield CronOperator(manager, client, [c.name for c in built])


class RunningClock(FakeClock):
    """The test's clock: its wall time (``now``, which the schedule reads) moves only
    when the test advances it, and its monotonic time also runs on its own.

    The operator's work queue keeps every delay on the monotonic clock: a requeue for
    the next tick, which the test's ``advance`` brings due, and the retry after a failed
    pass, a backoff of milliseconds. On a clock that stood still between advances, one
    pass failing under load (a timeout, a 429) was never retried, and the test waited
    out its 30 s (one way the first tick can go missing, as it did once in a loaded CI
    run)."""

    def __init__(self) -> None:
        super().__init__()
        self._started = time.monotonic()

    def monotonic(self) -> float:
        return super().monotonic() + (time.monotonic() - self._started)


def fake_clock_at(moment: datetime.datetime) -> FakeClock:
    clock = RunningClock()
    clock.advance((moment - clock.now()).total_seconds())
    return clock


def job_template() -> dict[str, Any]:
    """A valid RayJob spec that nothing will run: suspended, shut down when finished."""
    return {
        "entrypoint": "python -c \"print('tick')\"",
        "suspend": True,
        "shutdownAfterJobFinishes": True,
        "rayClusterSpec": {
            "rayVersion": "2.52.0",
            "headGroupSpec": {"template": {"spec": {"containers": [container("ray-head")]}}},
            "workerGroupSpecs": [
                {
                    "groupName": "small",
                    "replicas": 0,
                    "minReplicas": 0,
                    "maxReplicas": 1,
                    "template": {"spec": {"containers": [container("ray-worker")]}},
                }
            ],
        },
    }


def raycronjob(name: str, namespace: str, schedule: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCronJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"schedule": schedule, "jobTemplate": job_template(), **spec},
    }


def created_at(obj: Object) -> datetime.datetime:
    return parse_time(obj["metadata"]["creationTimestamp"])


def jobs_of(kube: KubeClient, namespace: str, cron: str) -> dict[str, Object]:
    items = kube.list(RAY_JOB, namespace, label_selector=f"ray.io/cronjob-name={cron}")["items"]
    return {item["metadata"]["name"]: item for item in items}


def last_schedule(kube: KubeClient, namespace: str, cron: str) -> str | None:
    status = kube.get(RAY_CRON_JOB, cron, namespace).get("status") or {}
    value = status.get("lastScheduleTime")
    return str(value) if value else None


def unix_minutes(moment: datetime.datetime) -> int:
    return int(moment.timestamp()) // 60


def rfc3339(moment: datetime.datetime) -> str:
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def next_five(moment: datetime.datetime) -> datetime.datetime:
    """The first whole five minutes strictly after ``moment``."""
    base = moment.replace(second=0, microsecond=0)
    return base + datetime.timedelta(minutes=5 - base.minute % 5)
