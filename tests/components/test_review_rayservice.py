"""The review's RayService verdicts: one case per decision of the RayService controller
(docs/conformance.md, "What the review predicts"), each given as the spec before and
after."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import pytest

from components.__main__ import main
from components.review import ObjectChange, ReviewSettings, as_json, as_markdown, as_text, review
from components.review.rayservice import rayservice_verdict, traffic_moves
from operator_runtime.render.resources import format_quantity
from tests.components.review_previews import cluster, example_sides, object_change

SERVE = "applications:\n- name: demo\n  import_path: demo:app\n"


def service(replicas: int = 2, **spec: Any) -> dict[str, Any]:
    """A RayService on the quickstart's cluster (a head and ``replicas`` workers, 1 CPU
    each)."""
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": "serve", "namespace": "default"},
        "spec": {
            "serveConfigV2": SERVE,
            "rayClusterConfig": cluster(replicas)["spec"],
            **spec,
        },
    }


def change(
    before: dict[str, Any] | None, after: dict[str, Any] | None, **extra: Any
) -> ObjectChange:
    return object_change("RayService", before, after, name="serve", **extra)


def edited(document: dict[str, Any], edit: Any) -> dict[str, Any]:
    copied = copy.deepcopy(document)
    edit(copied)
    return copied


def new_image(document: dict[str, Any]) -> None:
    head = document["spec"]["rayClusterConfig"]["headGroupSpec"]
    head["template"]["spec"]["containers"][0]["image"] = "rayproject/ray:2.53.0"


def append_group(document: dict[str, Any]) -> None:
    groups = document["spec"]["rayClusterConfig"]["workerGroupSpecs"]
    extra = copy.deepcopy(groups[0])
    extra.update(groupName="more", replicas=1)
    groups.append(extra)


def judge(before: dict[str, Any] | None, after: dict[str, Any] | None, **settings: Any):
    return rayservice_verdict(change(before, after), ReviewSettings(**settings))


def rules(verdict: Any) -> list[str]:
    return [f.rule for f in verdict.findings]


BASE = service()


def test_a_serve_config_change_is_redeployed_in_place() -> None:
    verdict = judge(BASE, edited(BASE, lambda d: d["spec"].update(serveConfigV2=SERVE + "#")))
    assert verdict.summary == "serve config redeployed in place"
    assert (verdict.pods_created, verdict.pods_deleted, verdict.peak_pods) == (0, 0, 3)
    assert any("redeployed in place" in e for e in verdict.effects)
    assert not verdict.findings


def test_a_cluster_change_makes_a_second_cluster_until_the_switch() -> None:
    verdict = judge(BASE, edited(BASE, new_image))
    assert verdict.summary == "new cluster: 3 pod(s) beside the old 3 until the switch"
    assert (verdict.pods_created, verdict.pods_deleted, verdict.peak_pods) == (3, 3, 6)
    assert format_quantity(verdict.before["cpu"]) == "3"
    assert format_quantity(verdict.peak["cpu"]) == "6"
    assert verdict.peak_seconds == 60
    assert rules(verdict) == ["upgrade-starts-new-cluster"]


def test_the_deletion_delay_is_the_least_time_both_run() -> None:
    after = edited(BASE, new_image)
    after["spec"]["rayClusterDeletionDelaySeconds"] = 300
    assert judge(BASE, after).peak_seconds == 300


def test_a_cluster_change_with_new_serve_config_deploys_it_on_the_new_cluster() -> None:
    after = edited(BASE, new_image)
    after["spec"]["serveConfigV2"] = SERVE + "#"
    verdict = judge(BASE, after)
    assert "the new serve config is deployed on the new cluster only" in verdict.effects


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: d["spec"]["rayClusterConfig"]["workerGroupSpecs"][0].update(replicas=4),
        lambda d: d["spec"]["rayClusterConfig"]["workerGroupSpecs"][0].update(maxReplicas=8),
    ],
    ids=["replicas", "maxReplicas"],
)
def test_replica_bounds_are_not_propagated(edit: Any) -> None:
    verdict = judge(BASE, edited(BASE, edit))
    assert verdict.summary == "cluster change not applied: the running cluster keeps its spec"
    assert (verdict.pods_created, verdict.pods_deleted, verdict.pods_after) == (0, 0, 3)
    assert rules(verdict) == ["change-not-applied"]


def test_an_appended_group_is_applied_in_place() -> None:
    verdict = judge(BASE, edited(BASE, append_group))
    assert verdict.summary.startswith("worker group(s) appended: the running cluster is updated")
    assert (verdict.pods_created, verdict.pods_deleted, verdict.pods_after) == (1, 0, 4)
    assert verdict.peak_seconds is None
    assert any("its cluster: worker group more is added" in e for e in verdict.effects)


@pytest.mark.parametrize(
    ("strategy", "settings", "applied"),
    [
        ({"type": "None"}, {}, False),
        (None, {"zero_downtime": False}, False),
        ({"type": "NewCluster"}, {"zero_downtime": False}, True),
    ],
    ids=["None", "zero downtime off", "NewCluster despite zero downtime off"],
)
def test_the_strategy_decides_whether_a_change_is_applied(
    strategy: dict[str, str] | None, settings: dict[str, Any], applied: bool
) -> None:
    before, after = BASE, edited(BASE, new_image)
    if strategy is not None:
        before = edited(before, lambda d: d["spec"].update(upgradeStrategy=strategy))
        after = edited(after, lambda d: d["spec"].update(upgradeStrategy=strategy))
    verdict = judge(before, after, **settings)
    assert (verdict.pods_created == 3) is applied
    expected = "upgrade-starts-new-cluster" if applied else "change-not-applied"
    assert rules(verdict) == [expected]


INCREMENTAL = service(
    upgradeStrategy={
        "type": "NewClusterWithIncrementalUpgrade",
        "clusterUpgradeOptions": {
            "maxSurgePercent": 50,
            "stepSizePercent": 25,
            "intervalSeconds": 30,
            "gatewayClassName": "istio",
        },
    },
)
INCREMENTAL["spec"]["rayClusterConfig"]["enableInTreeAutoscaling"] = True


def test_an_incremental_upgrade_moves_traffic_in_steps() -> None:
    verdict = judge(INCREMENTAL, edited(INCREMENTAL, new_image))
    assert verdict.summary.startswith("incremental upgrade")
    # 50 % capacity at a time, 25 % traffic per 30 s step: four steps, then the delay.
    assert any("4 traffic step(s), at least 120 s" in e for e in verdict.effects)
    assert verdict.peak_seconds == 120 + 60
    assert verdict.highest  # autoscaled: the range is given


@pytest.mark.parametrize(
    ("surge", "step", "moves"),
    [(100, 25, 4), (50, 25, 4), (50, 30, 4), (100, 100, 1), (20, 10, 10), (0, 10, None)],
)
def test_traffic_moves_follow_the_controllers_steps(surge: int, step: int, moves: int) -> None:
    assert traffic_moves(surge, step) == moves


def test_suspend_deletes_the_cluster_and_resume_makes_one() -> None:
    suspended = edited(BASE, lambda d: d["spec"].update(suspend=True))
    down = judge(BASE, suspended)
    assert (down.pods_deleted, down.pods_after) == (3, 0)
    assert rules(down) == ["suspend-deletes-pods"]
    up = judge(suspended, BASE)
    assert (up.pods_created, up.pods_before) == (3, 0)
    assert up.summary == "resumed: a new cluster of 3 pod(s)"


def test_created_and_deleted() -> None:
    created = judge(None, BASE)
    assert (created.pods_created, format_quantity(created.after["cpu"])) == (3, "3")
    deleted = judge(BASE, None)
    assert deleted.pods_deleted == 3
    assert deleted.effects[0].startswith("its clusters (the active one, and a pending one")
    assert rules(deleted) == ["cluster-deleted"]


def test_deleting_a_gcs_ft_service_waits_for_each_clusters_cleanup() -> None:
    ft = edited(
        BASE,
        lambda d: d["spec"]["rayClusterConfig"].update(
            gcsFaultToleranceOptions={"redisAddress": "redis:6379"}
        ),
    )
    verdict = judge(ft, None)
    assert rules(verdict) == ["cluster-deleted", "gcs-ft-deletion-waits"]


def test_the_decisions_are_the_controllers_own() -> None:
    # One home for each rule: the review calls the functions the controller calls.
    from components.review import rayservice
    from operator_runtime.controllers.rayservice import clusters, serve, traffic

    assert rayservice.cluster_update is clusters.cluster_update
    assert rayservice.new_cluster_allowed is clusters.new_cluster_allowed
    assert rayservice.deletion_delay is clusters.deletion_delay
    assert rayservice.capacity_step is serve.capacity_step
    assert rayservice.traffic_step is traffic.traffic_step


def test_every_format_says_how_long_the_peak_lasts() -> None:
    report = review([change(BASE, edited(BASE, new_image))], ReviewSettings())
    assert json.loads(as_json(report))["objects"][0]["peakSeconds"] == 60
    assert "peak 6 for at least 60 s" in as_text(report)
    assert "side by side (1 object(s)), each for at least 60 s" in as_markdown(report)


def test_the_gateway_examples_cluster_change_is_an_incremental_upgrade(tmp_path: Path) -> None:
    # The example run under mocks, then with a new Ray image: a second cluster, in steps.
    before, after = example_sides(
        tmp_path,
        "rayservice-gateway",
        {},
        lambda text: text.replace('"rayproject/ray:2.52.0"', '"rayproject/ray:2.53.0"'),
    )
    out, err = io.StringIO(), io.StringIO()
    code = main(
        ["review", "--before", before, "--after", after, "--stack", "dev"], stdout=out, stderr=err
    )
    assert code == 0, err.getvalue()
    text = out.getvalue()
    assert "incremental upgrade: a new cluster of 2 pod(s)" in text
    # 40 % capacity at a time (40, 80, 100), 20 % traffic every 30 s: five steps (20, 40;
    # 60, 80; 100), then the 60 s delay.
    assert "5 traffic step(s), at least 150 s" in text
    assert "WARN upgrade-starts-new-cluster" in text and "for at least 210 s" in text
    assert "the autoscaler owns the replicas of serve-workers" in text
