"""The RayService controller's pure decisions: traffic steps, the initializing timeout,
the serve config cache, which serve endpoints count and when a status is worth writing.
The real-server proofs are in tests/integration/rayservice."""

from __future__ import annotations

import copy
import datetime
import random
from typing import Any

import pytest

from operator_runtime.api import RayService
from operator_runtime.api.annotations import AnnotationKey
from operator_runtime.controllers.rayservice import serve, traffic
from operator_runtime.controllers.rayservice.options import RayServiceOptions
from operator_runtime.controllers.rayservice.run import ServeConfigCache, ServiceCaches, ServiceRun
from operator_runtime.controllers.rayservice.serve import (
    config_hash,
    given_config,
    receives_goal,
)
from operator_runtime.controllers.rayservice.status import (
    initializing_timeout_seconds,
    serve_endpoints,
    status_changed,
)
from operator_runtime.controllers.rayservice.traffic import traffic_weights, weights_of
from operator_runtime.runtime import kinds
from operator_runtime.runtime.cache import Cache
from operator_runtime.runtime.clock import FakeClock, format_time
from operator_runtime.runtime.reconcile import ObjectKey

CONTAINER = {"name": "ray-head", "image": "rayproject/ray:2.52.1"}


class Tools:
    """Only what the functions under test read: the clock, the options and empty caches."""

    def __init__(self) -> None:
        self.clock = FakeClock()
        self.options = RayServiceOptions()
        self.rng = random.Random(0)
        self.serve_configs = ServeConfigCache()
        self.caches = ServiceCaches(
            rayservices=Cache(kinds.RAY_SERVICE), clusters=Cache(kinds.RAY_CLUSTER),
            services=Cache(kinds.SERVICE), pods=Cache(kinds.POD),
            endpoint_slices=Cache(kinds.ENDPOINT_SLICE),
        )  # fmt: skip


def run_with(status: dict[str, Any], *, step: int = 25, interval: int = 10) -> ServiceRun:
    raw: dict[str, Any] = {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": "s", "namespace": "ns", "uid": "u", "generation": 1},
        "spec": {
            "upgradeStrategy": {
                "type": "NewClusterWithIncrementalUpgrade",
                "clusterUpgradeOptions": {
                    "gatewayClassName": "gw",
                    "stepSizePercent": step,
                    "intervalSeconds": interval,
                    "maxSurgePercent": 50,
                },
            },
            "rayClusterConfig": {
                "enableInTreeAutoscaling": True,
                "headGroupSpec": {"template": {"spec": {"containers": [CONTAINER]}}},
            },
        },
        "status": status,
    }
    return ServiceRun.start(
        Tools(),  # type: ignore[arg-type]
        ObjectKey("ns", "s"),
        raw,
        RayService.model_validate(raw),
    )


def sides(active: dict[str, Any], pending: dict[str, Any]) -> dict[str, Any]:
    return {
        "activeServiceStatus": {"rayClusterName": "old", **active},
        "pendingServiceStatus": {"rayClusterName": "new", **pending},
    }


def test_traffic_moves_one_step_once_the_interval_has_passed() -> None:
    run = run_with(sides({"trafficRoutedPercent": 100}, {"targetCapacity": 50}))
    assert traffic_weights(run, pending_ready=True) == (75, 25)


def test_traffic_waits_for_the_interval_since_the_last_move() -> None:
    run = run_with(sides({}, {"targetCapacity": 50, "trafficRoutedPercent": 25}))
    run.side("pendingServiceStatus")["lastTrafficMigratedTime"] = format_time(run.now())
    run.side("activeServiceStatus")["trafficRoutedPercent"] = 75
    assert traffic_weights(run, pending_ready=True) == (75, 25)
    run.tools.clock.advance(10)  # type: ignore[attr-defined]
    assert traffic_weights(run, pending_ready=True) == (50, 50)


def test_traffic_never_passes_the_pending_target_capacity() -> None:
    run = run_with(
        sides({"trafficRoutedPercent": 60}, {"targetCapacity": 50, "trafficRoutedPercent": 40})
    )
    assert traffic_weights(run, pending_ready=True) == (50, 50)


def test_traffic_stays_while_the_pending_cluster_is_not_ready() -> None:
    run = run_with(sides({"trafficRoutedPercent": 100}, {"targetCapacity": 50}))
    assert traffic_weights(run, pending_ready=False) == (100, 0)


def test_a_rollback_moves_traffic_back_to_the_active_cluster() -> None:
    status = sides(
        {"trafficRoutedPercent": 50, "targetCapacity": 100},
        {"trafficRoutedPercent": 50, "targetCapacity": 50},
    )
    status["conditions"] = [
        {
            "type": "RollbackInProgress",
            "status": "True",
            "reason": "DesiredClusterSpecChanged",
            "message": "rolling back",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
    ]
    run = run_with(status)
    assert traffic_weights(run, pending_ready=True) == (75, 25)


def test_weights_are_read_back_from_the_route_by_backend_name() -> None:
    run = run_with(sides({}, {}))
    route = {
        "spec": {
            "rules": [
                {
                    "backendRefs": [
                        {"name": "old-serve-svc", "weight": 70},
                        {"name": "new-serve-svc", "weight": 30},
                    ]
                }
            ]
        }
    }
    assert weights_of(route, run) == (70, 30)
    assert weights_of(None, run) == (-1, -1)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("90", 90.0), ("90s", 90.0), ("1m30s", 90.0), ("1h", 3600.0), ("1.5h", 5400.0),
     ("", None), ("soon", None), ("10x", None)],
)  # fmt: skip
def test_the_initializing_timeout_is_a_go_duration_or_seconds(
    value: str, seconds: float | None
) -> None:
    assert initializing_timeout_seconds({"ray.io/initializing-timeout": value}) == seconds


def test_the_serve_config_cache_forgets_clusters_no_longer_used() -> None:
    cache = ServeConfigCache(size=2)
    cache.put("ns/a", "c1", "cfg1")
    cache.put("ns/a", "c2", "cfg2")
    cache.keep_only("ns/a", {"c2"})
    assert cache.get("ns/a", "c1") == "" and cache.get("ns/a", "c2") == "cfg2"
    cache.put("ns/b", "c", "x")
    cache.put("ns/c", "c", "y")  # the least recently used RayService goes
    assert cache.get("ns/a", "c2") == "" and cache.get("ns/c", "c") == "y"


def test_a_cluster_status_copy_alone_is_not_worth_a_write() -> None:
    status = {"serviceStatus": "Running", "numServeEndpoints": 1, **sides({}, {})}
    run = run_with(copy.deepcopy(status))
    run.side("activeServiceStatus")["rayClusterStatus"] = {"state": "ready"}
    assert not status_changed(run)
    run.status["numServeEndpoints"] = 2
    assert status_changed(run)


def test_a_traffic_move_is_worth_a_write() -> None:
    run = run_with(sides({"trafficRoutedPercent": 100}, {"trafficRoutedPercent": 0}))
    run.side("pendingServiceStatus")["trafficRoutedPercent"] = 25
    assert status_changed(run)


def _serve_slice(name: str, owner_uid: str | None, *pods: tuple[str, bool]) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name, "namespace": "ns",
        "labels": {"kubernetes.io/service-name": "s-serve-svc", "ray.io/serve": "s-serve-svc"},
    }  # fmt: skip
    if owner_uid is not None:
        metadata["ownerReferences"] = [{"kind": "Service", "name": "s-serve-svc", "uid": owner_uid}]
    endpoints = [{"targetRef": {"uid": uid}, "conditions": {"ready": ok}} for uid, ok in pods]
    return {"metadata": metadata, "endpoints": endpoints}


@pytest.mark.parametrize(
    ("service_uid", "slices", "expected"),
    [
        # Distinct ready pods across the Service's slices.
        ("now", [_serve_slice("a", "now", ("p1", True), ("p2", False)),
                 _serve_slice("b", "now", ("p1", True), ("p3", True))], 2),
        # A slice without an owner reference (mirrored by hand) still counts.
        ("now", [_serve_slice("a", None, ("p1", True))], 1),
        # Suspended and resumed: the old Service's slice, not yet collected, is not its.
        ("now", [_serve_slice("old", "before", ("p1", True))], 0),
        # The Service itself gone: nothing serves, whatever slices are left.
        (None, [_serve_slice("old", "before", ("p1", True))], 0),
    ],
)  # fmt: skip
def test_serve_endpoints_are_those_of_the_serve_service_that_exists_now(
    service_uid: str | None, slices: list[dict[str, Any]], expected: int
) -> None:
    run = run_with({})
    if service_uid is not None:
        run.tools.caches.services.upsert(
            {"metadata": {"name": "s-serve-svc", "namespace": "ns", "uid": service_uid}}
        )
    for endpoint_slice in slices:
        run.tools.caches.endpoint_slices.upsert(endpoint_slice)
    assert serve_endpoints(run, "s-serve-svc") == expected


def test_time_format_round_trips() -> None:
    moment = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    assert format_time(moment) == "2026-01-01T00:00:00Z"


def _cluster(name: str, annotations: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": name, "annotations": annotations}}


def test_after_a_restart_a_cluster_keeps_the_config_recorded_on_it() -> None:
    """The cache is empty (a restart): the old cluster's annotations say what it runs,
    never the new serveConfigV2."""
    run = run_with(sides({}, {}))
    run.service = run.service.model_copy(
        update={"spec": run.service.spec.model_copy(update={"serve_config_v2": "new"})}
    )
    recorded = {
        AnnotationKey.SERVE_CONFIG_HASH.value: config_hash("old"),
        AnnotationKey.SERVE_CONFIG.value: "old",
    }
    assert given_config(run, _cluster("old", recorded)) == "old"
    # A record whose text does not match its hash is no record of the text.
    tampered = {**recorded, AnnotationKey.SERVE_CONFIG.value: "new"}
    assert given_config(run, _cluster("old", tampered)) is None
    # A config too large to record as text: its hash still says it is serveConfigV2.
    hashed = {AnnotationKey.SERVE_CONFIG_HASH.value: config_hash("new")}
    assert given_config(run, _cluster("new", hashed)) == "new"
    assert given_config(run, _cluster("fresh", {})) is None
    # This process's own last PUT wins over an annotation the informer has not caught up on.
    run.tools.serve_configs.put(run.cache_key, "old", "newer")
    assert given_config(run, _cluster("old", recorded)) == "newer"


def test_only_the_pending_cluster_or_a_lone_active_one_is_sent_serve_config_v2() -> None:
    upgrading = run_with(sides({}, {}))
    assert receives_goal(upgrading, "new") and not receives_goal(upgrading, "old")
    assert not receives_goal(upgrading, "dangling")
    alone = run_with({"activeServiceStatus": {"rayClusterName": "old"}})
    assert receives_goal(alone, "old")


ROLLING_BACK = {
    "type": "RollbackInProgress",
    "status": "True",
    "reason": "DesiredClusterSpecChanged",
    "message": "rolling back",
    "lastTransitionTime": "2026-01-01T00:00:00Z",
}


@pytest.mark.parametrize(
    ("active", "pending", "rolling_back", "expected"),
    [
        # Upgrade: pending gains 50 while the sum is at most 100; active gives up above.
        ((100, 100), (0, 0), False, {"new": 50}),
        ((100, 50), (50, 50), False, {"old": 50}),
        ((50, 50), (50, 25), False, {}),  # traffic has not caught up: no move
        ((0, 0), (100, 100), False, {}),  # done
        # Rollback: the active cluster gains back, the pending one gives up.
        ((50, 50), (50, 50), True, {"old": 100}),
        ((100, 100), (50, 0), True, {"new": 0}),
        ((100, 100), (0, 0), True, {}),  # done
    ],
)
def test_target_capacity_steps_toward_the_gaining_side(
    monkeypatch: pytest.MonkeyPatch,
    active: tuple[int, int],
    pending: tuple[int, int],
    rolling_back: bool,
    expected: dict[str, int],
) -> None:
    status = sides(
        {"targetCapacity": active[0], "trafficRoutedPercent": active[1]},
        {"targetCapacity": pending[0], "trafficRoutedPercent": pending[1]},
    )
    if rolling_back:
        status["conditions"] = [ROLLING_BACK]
    run = run_with(status)
    applied: dict[str, int] = {}
    monkeypatch.setattr(traffic, "routing_ready", lambda _run: True)
    monkeypatch.setattr(
        serve,
        "_apply_capacity",
        lambda _run, _dashboard, cluster, goal: applied.__setitem__(
            cluster["metadata"]["name"], goal
        ),
    )
    for name in ("old", "new"):
        serve.step_target_capacity(run, None, {"metadata": {"name": name}})  # type: ignore[arg-type]
    assert applied == expected
