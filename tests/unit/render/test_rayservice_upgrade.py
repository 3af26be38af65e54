"""The RayService controller's decisions on a changed ``rayClusterConfig``, as pure
functions (``render/rayservice_upgrade.py``): the controller and the review both call
them."""

from __future__ import annotations

import pytest

from operator_runtime.api import FeatureGates
from operator_runtime.api.rayservice import RayServiceUpgradeStrategy
from operator_runtime.render.rayservice_upgrade import (
    capacity_step,
    cluster_update,
    new_cluster_allowed,
    traffic_step,
)
from tests.unit.render.test_render_rayservice import (
    CHANGING,
    IGNORED,
    _changed,
    made_cluster,
    make_service,
)

GATES_ON = FeatureGates()
GATES_OFF = FeatureGates(ray_service_incremental_upgrade=False)


@pytest.mark.parametrize("what", sorted(IGNORED))
def test_a_change_the_hash_leaves_out_updates_nothing(what: str) -> None:
    assert cluster_update(made_cluster(make_service()), _changed(IGNORED[what])) == "none"


def test_a_group_appended_is_applied_in_place() -> None:
    cluster = made_cluster(make_service())
    assert cluster_update(cluster, _changed(CHANGING["a group added"])) == "in-place"


@pytest.mark.parametrize("what", sorted(set(CHANGING) - {"a group added"}))
def test_any_other_change_needs_a_new_cluster(what: str) -> None:
    assert cluster_update(made_cluster(make_service()), _changed(CHANGING[what])) == "new-cluster"


@pytest.mark.parametrize(
    ("kind", "gates", "zero_downtime", "allowed"),
    [
        (None, GATES_ON, True, True),
        (None, GATES_ON, False, False),
        ("NewCluster", GATES_ON, False, True),
        ("NewClusterWithIncrementalUpgrade", GATES_ON, True, True),
        ("NewClusterWithIncrementalUpgrade", GATES_OFF, True, False),
        ("None", GATES_ON, True, False),
    ],
)
def test_a_new_cluster_follows_the_strategy(
    kind: str | None, gates: FeatureGates, zero_downtime: bool, allowed: bool
) -> None:
    strategy = None if kind is None else RayServiceUpgradeStrategy(type=kind)
    assert new_cluster_allowed(strategy, gates, zero_downtime=zero_downtime) is allowed


def test_capacity_moves_by_the_surge_and_traffic_by_the_step() -> None:
    # Pending gains 40 while the sum is at most 100; active gives 40 up above it.
    assert capacity_step(0, 100, 40) == (40, 100)
    assert capacity_step(40, 100, 40) == (40, 60)
    assert capacity_step(80, 40, 40) == (80, 0)
    assert capacity_step(80, 0, 40) == (100, 0)
    # Traffic: never past the gaining side's capacity, nor 100.
    assert traffic_step(0, 40, 25) == 25
    assert traffic_step(25, 40, 25) == 40
    assert traffic_step(90, 100, 25) == 100
