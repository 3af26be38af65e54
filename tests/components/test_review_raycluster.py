"""The review's RayCluster verdicts: one case per behaviour of the controller's pod step
(docs/conformance.md), each given as the spec before and after."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import pytest

from components.review import ObjectChange, ReviewSettings, review
from components.review.raycluster import raycluster_verdict
from operator_runtime.api import FeatureGates
from operator_runtime.render import RenderOptions
from operator_runtime.render.resources import format_quantity
from tests.components.review_previews import cluster, object_change

GATE_ON = "RayClusterNetworkPolicy=true"


def change(
    before: dict[str, Any] | None, after: dict[str, Any] | None, **extra: Any
) -> ObjectChange:
    return object_change("RayCluster", before, after, **extra)


def with_recreate(document: dict[str, Any]) -> dict[str, Any]:
    document["spec"]["upgradeStrategy"] = {"type": "Recreate"}
    return document


def worker(document: dict[str, Any]) -> dict[str, Any]:
    group: dict[str, Any] = document["spec"]["workerGroupSpecs"][0]
    return group


def edited(document: dict[str, Any], edit: Any) -> dict[str, Any]:
    copied = copy.deepcopy(document)
    edit(copied)
    return copied


def add_gpu_group(document: dict[str, Any]) -> None:
    gpu = copy.deepcopy(worker(document))
    gpu.update(groupName="gpu", replicas=1)
    gpu["template"]["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/gpu": "1"}
    document["spec"]["workerGroupSpecs"].append(gpu)


@dataclass(frozen=True)
class Case:
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    created: int
    deleted: int
    rules: tuple[str, ...] = ()
    summary: str = ""
    effect: str = ""
    settings: ReviewSettings = field(default_factory=ReviewSettings)
    extra: dict[str, Any] = field(default_factory=dict)


BASE = cluster(2)
AUTOSCALED = cluster(3, enableInTreeAutoscaling=True)
CASES = {
    "scale up creates the difference": Case(BASE, cluster(3), 1, 0, summary="1 pod(s) created"),
    "scale down deletes the surplus": Case(cluster(3), cluster(1), 0, 2, summary="2 deleted"),
    "scale down with the autoscaler deletes nothing": Case(
        AUTOSCALED,
        edited(AUTOSCALED, lambda d: worker(d).update(replicas=1)),
        0,
        0,
        effect="the autoscaler chooses which go",
    ),
    "ENABLE_RANDOM_POD_DELETE scales autoscaled groups down": Case(
        AUTOSCALED,
        edited(AUTOSCALED, lambda d: worker(d).update(replicas=1)),
        0,
        2,
        settings=ReviewSettings(random_pod_delete=True),
    ),
    "replicas are clamped to maxReplicas": Case(BASE, cluster(9), 2, 0),
    "a template change does not roll running pods": Case(
        BASE,
        cluster(2, image="rayproject/ray:2.53.0"),
        0,
        0,
        rules=("template-not-rolled",),
        summary="no pod changes; running pods keep the old template",
    ),
    "Recreate deletes and recreates every pod": Case(
        with_recreate(cluster(2)),
        with_recreate(cluster(2, image="rayproject/ray:2.53.0")),
        3,
        3,
        rules=("recreate-restarts-cluster",),
    ),
    "Recreate ignores a replicas change": Case(
        with_recreate(cluster(2)), with_recreate(cluster(3)), 1, 0
    ),
    "Recreate ignores tolerations": Case(
        with_recreate(cluster(2)),
        edited(
            with_recreate(cluster(2)),
            lambda d: worker(d)["template"]["spec"].update(tolerations=[{"key": "gpu"}]),
        ),
        0,
        0,
        effect="left out of the pod hash",
    ),
    "suspending the cluster deletes every pod": Case(
        BASE, cluster(2, suspend=True), 0, 3, rules=("suspend-deletes-pods",)
    ),
    "resuming the cluster creates every pod": Case(cluster(2, suspend=True), BASE, 3, 0),
    "suspending a worker group deletes its pods": Case(
        BASE,
        edited(BASE, lambda d: worker(d).update(suspend=True)),
        0,
        2,
        rules=("suspend-deletes-pods",),
    ),
    "a removed worker group's pods keep running": Case(
        edited(BASE, add_gpu_group),
        BASE,
        0,
        0,
        rules=("removed-group-pods-remain",),
        effect="worker group gpu is removed, but its 1 pod(s) keep running",
    ),
    "an added worker group creates its pods": Case(BASE, edited(BASE, add_gpu_group), 1, 0),
    "a new cluster creates the head and its workers": Case(None, BASE, 3, 0),
    "a deleted cluster loses every pod": Case(BASE, None, 0, 3, rules=("cluster-deleted",)),
    "a deleted GCS FT cluster waits for its Redis cleanup": Case(
        cluster(
            2,
            gcsFaultToleranceOptions={"redisAddress": "redis:6379"},
        ),
        None,
        0,
        3,
        rules=("cluster-deleted", "gcs-ft-deletion-waits"),
        effect="at most 300 s",
    ),
    "ray.io/gcs-ft-deletion-timeout bounds the wait": Case(
        edited(
            cluster(2, gcsFaultToleranceOptions={"redisAddress": "redis:6379"}),
            lambda d: d["metadata"].update(annotations={"ray.io/gcs-ft-deletion-timeout": "60"}),
        ),
        None,
        0,
        3,
        rules=("cluster-deleted", "gcs-ft-deletion-waits"),
        effect="at most 60 s",
    ),
    "without ENABLE_GCS_FT_REDIS_CLEANUP a GCS FT deletion does not wait": Case(
        cluster(2, gcsFaultToleranceOptions={"redisAddress": "redis:6379"}),
        None,
        0,
        3,
        rules=("cluster-deleted",),
        settings=ReviewSettings(gcs_ft_redis_cleanup=False),
    ),
    "a replacement recreates every pod": Case(
        BASE,
        cluster(3),
        4,
        3,
        rules=("replaced-restarts-cluster",),
        extra={"op": "replace", "replace_reasons": ("metadata.name",)},
    ),
}


@pytest.mark.parametrize("name", CASES)
def test_raycluster_verdict(name: str) -> None:
    case = CASES[name]
    verdict = raycluster_verdict(change(case.before, case.after, **case.extra), case.settings)
    assert (verdict.pods_created, verdict.pods_deleted) == (case.created, case.deleted)
    assert tuple(sorted(f.rule for f in verdict.findings)) == case.rules
    if case.summary:
        assert verdict.summary == case.summary
    if case.effect:
        assert any(case.effect in effect for effect in verdict.effects), verdict.effects


def test_the_ledger_counts_as_status_desired() -> None:
    # Head 1 CPU/2Gi plus 3 workers of 1 CPU/2Gi; the GPU group adds a pod with 1 GPU.
    verdict = raycluster_verdict(
        change(cluster(3), edited(cluster(3), add_gpu_group)), ReviewSettings()
    )
    before = {k: format_quantity(v) for k, v in verdict.before.items()}
    after = {k: format_quantity(v) for k, v in verdict.after.items()}
    assert before == {"cpu": "4", "gpu": "0", "tpu": "0", "memory": "8Gi"}
    assert after == {"cpu": "5", "gpu": "1", "tpu": "0", "memory": "10Gi"}
    assert (verdict.pods_before, verdict.pods_after, verdict.peak_pods) == (4, 5, 5)


def test_a_suspended_cluster_holds_nothing() -> None:
    verdict = raycluster_verdict(change(cluster(2), cluster(2, suspend=True)), ReviewSettings())
    assert format_quantity(verdict.after["cpu"]) == "0"
    assert verdict.pods_after == 0


def test_a_removed_groups_pods_stay_in_the_ledger() -> None:
    verdict = raycluster_verdict(change(edited(BASE, add_gpu_group), BASE), ReviewSettings())
    assert verdict.pods_after == verdict.pods_before == 4
    assert format_quantity(verdict.after["gpu"]) == "1"


def test_a_removed_groups_pods_lose_their_network_policy() -> None:
    """KubeRay v1.7.0's NetworkPolicy controller deletes a removed group's policy while
    the RayCluster controller leaves its pods running."""
    isolated = edited(BASE, lambda d: d["spec"].update(networkPolicy={}))
    gates = ReviewSettings(options=RenderOptions(feature_gates=FeatureGates.parse(GATE_ON)))
    verdict = raycluster_verdict(change(edited(isolated, add_gpu_group), isolated), gates)
    [effect] = [e for e in verdict.effects if "worker group gpu is removed" in e]
    assert "NetworkPolicy demo-workers-gpu is deleted: they are no longer isolated" in effect
    assert verdict.findings[0].rule == "removed-group-pods-remain"
    plain = raycluster_verdict(change(edited(BASE, add_gpu_group), BASE), gates)
    assert not [e for e in plain.effects if "NetworkPolicy" in e]


def test_a_replacement_that_creates_first_peaks_at_both_clusters() -> None:
    first = change(BASE, BASE, op="replace", create_before_delete=True)
    verdict = raycluster_verdict(first, ReviewSettings())
    assert verdict.peak_pods == 6
    assert format_quantity(verdict.peak["cpu"]) == "6"


def test_an_invalid_cluster_blocks() -> None:
    bad = edited(BASE, lambda d: worker(d).update(minReplicas=5))
    report = review([change(BASE, bad)], ReviewSettings())
    assert [f.rule for f in report.findings] == ["invalid-object"]
    assert report.blocked


def test_levels_can_be_raised() -> None:
    settings = ReviewSettings(levels={"suspend-deletes-pods": "block"})
    report = review([change(BASE, cluster(2, suspend=True))], settings)
    assert report.blocked


def test_the_pod_hash_is_the_controllers_own() -> None:
    # One home for the rule: the review calls the function the controller calls.
    from components.review import raycluster
    from operator_runtime.controllers.raycluster import upgrade

    assert raycluster.spec_hash is upgrade.spec_hash
    assert raycluster.recreate_requested is upgrade.recreate_requested


def test_an_autoscaled_cluster_has_bounds() -> None:
    # Head 1 CPU; the cpu group ranges over 0..4 workers of 1 CPU.
    verdict = raycluster_verdict(change(AUTOSCALED, AUTOSCALED | {}), ReviewSettings())
    assert format_quantity(verdict.lowest["cpu"]) == "1"
    assert format_quantity(verdict.highest["cpu"]) == "5"
    plain = raycluster_verdict(change(BASE, cluster(3)), ReviewSettings())
    assert not plain.lowest and not plain.highest


@pytest.mark.parametrize(
    ("where", "named"),
    [
        ("headGroupSpec", "running pods of the head keep the old template"),
        ("workerGroupSpecs", "running pods of worker group cpu keep the old template"),
    ],
)
def test_a_template_change_names_the_pods_that_keep_the_old_one(where: str, named: str) -> None:
    def new_image(document: dict[str, Any]) -> None:
        spec = document["spec"][where]
        group = spec[0] if isinstance(spec, list) else spec
        group["template"]["spec"]["containers"][0]["image"] = "rayproject/ray:2.53.0"

    verdict = raycluster_verdict(change(BASE, edited(BASE, new_image)), ReviewSettings())
    assert [f.message for f in verdict.findings] == [named]


def test_autoscaler_owned_replicas_are_said() -> None:
    owned = edited(AUTOSCALED, lambda d: worker(d).pop("replicas"))
    verdict = raycluster_verdict(change(owned, owned | {}), ReviewSettings())
    assert any("the autoscaler owns the replicas of cpu" in e for e in verdict.effects)
