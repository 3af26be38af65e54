"""On the real clock: ``* * * * *`` makes its first RayJob at the next whole minute."""

from __future__ import annotations

import datetime
import time

from hack.localcluster import LocalCluster
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.clock import SystemClock
from tests.integration.raycronjob.conftest import (
    created_at,
    cron_operator,
    jobs_of,
    raycronjob,
    unix_minutes,
)
from tests.waiting import wait_for


def test_every_minute_makes_its_first_rayjob_within_a_minute(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str
) -> None:
    with cron_operator(ray_crds, namespace, SystemClock()):
        began = time.monotonic()
        cron = kube.create(raycronjob("minutely", namespace, "* * * * *"))
        tick = created_at(cron).replace(second=0) + datetime.timedelta(minutes=1)
        jobs = wait_for(
            "the first RayJob",
            lambda: jobs_of(kube, namespace, "minutely"),
            timeout=70,
            interval=0.2,
        )
        took = time.monotonic() - began
        late = datetime.datetime.now(datetime.UTC) - tick
    print(
        f"\nfirst RayJob {took:.1f} s after the create, {late.total_seconds():.2f} s after its tick"
    )
    assert list(jobs) == [f"minutely-{unix_minutes(tick)}"]
    assert took <= 70
