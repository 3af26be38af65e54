"""The review's RayJob verdicts: a new run, an edit a running job ignores, suspend and
resume, retries and deletion (docs/conformance.md, "What the review predicts")."""

from __future__ import annotations

import copy
import io
from pathlib import Path
from typing import Any

from components.__main__ import main
from components.rendering import Source
from components.review import ObjectChange, ReviewSettings, from_sources
from components.review.rayjob import rayjob_verdict
from operator_runtime.render.resources import format_quantity
from tests.components.review_previews import cluster, example_sides, object_change


def job(name: str = "train", **spec: Any) -> dict[str, Any]:
    """A K8sJobMode RayJob on the quickstart's cluster (a head and two 1-CPU workers)."""
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "entrypoint": "python train.py",
            "shutdownAfterJobFinishes": True,
            "rayClusterSpec": cluster(2)["spec"],
            **spec,
        },
    }


def change(
    before: dict[str, Any] | None, after: dict[str, Any] | None, **extra: Any
) -> ObjectChange:
    return object_change("RayJob", before, after, name="train", **extra)


def judge(before: dict[str, Any] | None, after: dict[str, Any] | None, **extra: Any):
    return rayjob_verdict(change(before, after, **extra), ReviewSettings())


def rules(verdict: Any) -> list[str]:
    return [f.rule for f in verdict.findings]


def edited(document: dict[str, Any], edit: Any) -> dict[str, Any]:
    copied = copy.deepcopy(document)
    edit(copied)
    return copied


BASE = job()
CLUSTER_AND_SUBMITTER = 4  # the head, two workers and the submitter pod


def test_a_new_job_is_a_new_run_on_a_new_cluster() -> None:
    verdict = judge(None, BASE)
    assert verdict.summary == "a new run on a new cluster of 3 pod(s) and a submitter pod"
    assert verdict.pods_created == CLUSTER_AND_SUBMITTER
    # The cluster's 3 CPUs and the submitter's 500m request.
    assert format_quantity(verdict.after["cpu"]) == "3500m"
    assert "its cluster is deleted 0 s after the job ends (shutdownAfterJobFinishes)" in (
        verdict.effects
    )


def test_a_job_on_a_selected_cluster_makes_none() -> None:
    selected = job(clusterSelector={"ray.io/cluster": "shared"})
    del selected["spec"]["rayClusterSpec"]
    del selected["spec"]["shutdownAfterJobFinishes"]
    verdict = judge(None, selected)
    assert verdict.summary == (
        "a new run on the existing cluster its clusterSelector names and a submitter pod"
    )
    assert verdict.pods_created == 1


def test_the_components_replace_is_a_new_run_beside_the_old() -> None:
    after = edited(BASE, lambda d: d["spec"].update(entrypoint="python train.py --epochs 3"))
    verdict = judge(BASE, after, op="replace", create_before_delete=True)
    assert verdict.summary.startswith("a new run on a new cluster of 3 pod(s)")
    assert (verdict.pods_created, verdict.pods_deleted, verdict.peak_pods) == (4, 4, 8)
    assert format_quantity(verdict.peak["cpu"]) == "7"
    assert rules(verdict) == ["job-runs-again"]


def test_two_programs_pair_a_renamed_job_into_a_replacement() -> None:
    # The components name a RayJob after a digest of its spec; one resource, two names.
    old = job("train-1111111")
    new = edited(job("train-2222222"), lambda d: d["spec"].update(entrypoint="python b.py"))
    origin = 'resource "train"'
    changes = from_sources([Source(old, origin, frozenset())], [Source(new, origin, frozenset())])
    assert [(c.op, c.name, c.create_before_delete) for c in changes] == [
        ("replace", "train-2222222", True)
    ]
    assert "spec.entrypoint" in changes[0].changed


def test_an_edit_in_place_is_ignored_by_the_running_job() -> None:
    after = edited(
        BASE, lambda d: d["spec"]["rayClusterSpec"]["workerGroupSpecs"][0].update(replicas=4)
    )
    verdict = judge(BASE, after)
    assert verdict.summary == "not applied to the running job: it keeps the spec it started with"
    assert (verdict.pods_created, verdict.pods_deleted) == (0, 0)
    assert rules(verdict) == ["change-not-applied"]


def test_what_the_controller_reads_later_is_not_ignored() -> None:
    verdict = judge(BASE, edited(BASE, lambda d: d["spec"].update(activeDeadlineSeconds=600)))
    assert verdict.summary == "no run changes"
    assert not verdict.findings
    assert "read by the controller as the run goes on: spec.activeDeadlineSeconds" in (
        verdict.effects
    )


def test_suspend_deletes_the_cluster_and_resume_starts_over() -> None:
    suspended = edited(BASE, lambda d: d["spec"].update(suspend=True))
    down = judge(BASE, suspended)
    assert (down.pods_deleted, down.pods_after) == (CLUSTER_AND_SUBMITTER, 0)
    assert rules(down) == ["suspend-deletes-pods"]
    up = judge(suspended, BASE)
    assert (up.pods_created, up.pods_before) == (CLUSTER_AND_SUBMITTER, 0)
    assert up.summary.startswith("resumed: a new run")


def test_retries_are_said() -> None:
    verdict = judge(None, job(backoffLimit=2))
    assert verdict.effects[0].startswith("a failed run is retried up to 2 time(s)")


def test_a_cluster_kept_after_the_job_is_said() -> None:
    kept = job()
    del kept["spec"]["shutdownAfterJobFinishes"]
    verdict = judge(None, kept)
    assert any("keeps running after the job ends" in e for e in verdict.effects)


def test_deletion_takes_the_cluster_and_the_submitter() -> None:
    verdict = judge(BASE, None)
    assert verdict.pods_deleted == CLUSTER_AND_SUBMITTER
    assert verdict.effects[0].startswith("its Ray job is stopped if it still runs")
    assert rules(verdict) == ["cluster-deleted"]


def test_the_batch_examples_entrypoint_change_is_a_new_run(tmp_path: Path) -> None:
    # The example run under mocks, then with another entrypoint: a new name, a new run.
    before, after = example_sides(
        tmp_path, "batch-rayjob", {"after": {"entrypoint": "python -c 'print(1)'"}}
    )
    out, err = io.StringIO(), io.StringIO()
    code = main(
        ["review", "--before", before, "--after", after, "--stack", "dev"], stdout=out, stderr=err
    )
    assert code == 0, err.getvalue()
    text = out.getvalue()
    assert text.startswith("1 Ray object(s) change · pods +3 -3 · CPU 2500m")
    assert "(replace): a new run on a new cluster of 2 pod(s) and a submitter pod" in text
    assert "WARN job-runs-again" in text
