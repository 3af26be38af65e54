"""What each batch scheduler adds to a RayJob's children, and the PodGroup numbers, as
KubeRay v1.7.0 computes them (the RayCluster side is in the golden cases
``volcano-*``, ``scheduler-plugins-*``, ``yunikorn-gang`` and ``kai-scheduler``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from operator_runtime.api import RayCluster, RayJob
from operator_runtime.controllers.batchscheduler import _same_quantities
from operator_runtime.render import (
    RenderError,
    RenderOptions,
    SubmitterParams,
    build_rayjob_cluster,
    build_submitter_job,
)
from operator_runtime.render.batchscheduler import (
    BatchSchedulerError,
    add_child_metadata,
    chosen_scheduler,
    refuse_on_submission,
    volcano_pod_group_for,
)
from operator_runtime.render.rayjob import render_rayjob
from operator_runtime.render.resources import amount


def worker(name: str, cpu: str, *, replicas: int, min_replicas: int) -> dict[str, Any]:
    return {
        "groupName": name,
        "replicas": replicas,
        "minReplicas": min_replicas,
        "maxReplicas": 10,
        "rayStartParams": {},
        "template": {
            "spec": {
                "containers": [
                    {"name": "ray-worker", "image": "rayproject/ray:2.52.0",
                     "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}
                ]
            }
        },
    }  # fmt: skip


def rayjob(mode: str = "K8sJobMode", labels: dict[str, str] | None = None, **spec: Any) -> RayJob:
    cluster_spec = {
        "headGroupSpec": {
            "rayStartParams": {},
            "template": {
                "spec": {
                    "containers": [
                        {"name": "ray-head", "image": "rayproject/ray:2.52.0",
                         "resources": {"requests": {"cpu": "1", "memory": "2Gi"}}}
                    ]
                }
            },
        },
        "workerGroupSpecs": [worker("cpu", "2", replicas=3, min_replicas=1)],
    }  # fmt: skip
    return RayJob.model_validate(
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayJob",
            "metadata": {"name": "train", "namespace": "ns", "uid": "job-uid",
                         "labels": labels or {}, "annotations": {"note": "kept"}},
            "spec": {"entrypoint": "python main.py", "submissionMode": mode,
                     "rayClusterSpec": cluster_spec, **spec},
        }
    )  # fmt: skip


def test_the_deprecated_flag_means_volcano() -> None:
    assert chosen_scheduler("", True) == "volcano"
    assert chosen_scheduler("yunikorn", False) == "yunikorn"
    assert chosen_scheduler("", False) == ""


@pytest.mark.parametrize(
    ("mode", "cpu", "memory"),
    [("K8sJobMode", "7500m", "5320Mi"), ("SidecarMode", "7500m", "5320Mi"),
     ("HTTPMode", "7", "5Gi"), ("InteractiveMode", "7", "5Gi")],
)  # fmt: skip
def test_a_rayjobs_volcano_group_is_its_cluster_plus_its_submitters_resources(
    mode: str, cpu: str, memory: str
) -> None:
    """Desired size 1 + 3 members; the submitter (500m/200Mi requests) adds resources only."""
    job = rayjob(mode, labels={"volcano.sh/queue-name": "q", "ray.io/priority-class-name": "p"})
    group = volcano_pod_group_for(job)
    assert group is not None
    assert group["metadata"]["name"] == "ray-train-pg"
    assert group["metadata"]["annotations"] == {"note": "kept"}
    assert group["metadata"]["ownerReferences"][0]["kind"] == "RayJob"
    spec = group["spec"]
    assert (spec["minMember"], spec["queue"], spec["priorityClassName"]) == (4, "q", "p")
    assert set(spec["minResources"]) == {"cpu", "memory"}
    for name, expected in (("cpu", cpu), ("memory", memory)):
        have, want = amount(spec["minResources"][name]), amount(expected)
        assert have is not None and want is not None and have.value == want.value


def test_a_rayjobs_own_cluster_has_no_group_of_its_own_and_its_pods_use_the_rayjobs() -> None:
    options = RenderOptions(batch_scheduler="volcano")
    job = rayjob(labels={"volcano.sh/queue-name": "q"})
    child = build_rayjob_cluster(job=job, cluster_name="train-abcde", job_id="j", options=options)
    meta = child["metadata"]
    assert meta["annotations"]["scheduling.k8s.io/group-name"] == "ray-train-pg"
    assert meta["annotations"]["volcano.sh/task-spec"] == ""
    assert meta["labels"]["volcano.sh/queue-name"] == "q"
    cluster = RayCluster.model_validate(child)
    assert volcano_pod_group_for(cluster) is None
    pod: dict[str, Any] = {"metadata": {}, "spec": {}}
    add_child_metadata("volcano", parent=cluster, child_object=pod, kind="Pod", group_name="cpu")
    assert pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "ray-train-pg"
    assert pod["spec"]["schedulerName"] == "volcano"


def test_only_a_k8s_job_mode_cluster_is_stamped() -> None:
    options = RenderOptions(batch_scheduler="volcano")
    child = build_rayjob_cluster(
        job=rayjob("HTTPMode"), cluster_name="train-abcde", job_id="j", options=options
    )
    assert "scheduling.k8s.io/group-name" not in child["metadata"].get("annotations", {})


def test_the_submitter_pod_template_joins_the_gang() -> None:
    job = rayjob(labels={"volcano.sh/queue-name": "q"})
    cluster = RayCluster.model_validate(
        build_rayjob_cluster(job=job, cluster_name="train-abcde", job_id="j")
    )
    for scheduler, name in (("volcano", "volcano"), ("yunikorn", "yunikorn"),
                            ("scheduler-plugins", "scheduler-plugins-scheduler")):  # fmt: skip
        submitter = build_submitter_job(
            params=SubmitterParams(job=job, job_id="j", dashboard_url="x:8265", cluster=cluster,
                                   options=RenderOptions(batch_scheduler=scheduler))
        )  # fmt: skip
        template = submitter["spec"]["template"]
        assert template["spec"]["schedulerName"] == name
    assert template["metadata"]["labels"]["ray.io/originated-from-crd"] == "RayJob"
    volcano = build_submitter_job(
        params=SubmitterParams(job=job, job_id="j", dashboard_url="x:8265", cluster=cluster,
                               options=RenderOptions(batch_scheduler="volcano"))
    )["spec"]["template"]["metadata"]  # fmt: skip
    assert volcano["annotations"]["volcano.sh/task-spec"] == "submittergroup"
    assert volcano["labels"]["volcano.sh/queue-name"] == "q"


def test_yunikorn_task_groups_of_a_rayjob_include_the_submitter() -> None:
    job = rayjob(labels={"ray.io/gang-scheduling-enabled": "true",
                         "yunikorn.apache.org/app-id": "a1"})  # fmt: skip
    options = RenderOptions(batch_scheduler="yunikorn")
    child = build_rayjob_cluster(job=job, cluster_name="train-abcde", job_id="j", options=options)
    meta = child["metadata"]
    assert meta["labels"]["applicationId"] == "a1"
    assert "yunikorn.apache.org/task-group-name" not in meta["annotations"]
    groups = json.loads(meta["annotations"]["yunikorn.apache.org/task-groups"])
    assert [(g["name"], g["minMember"]) for g in groups] == [
        ("headgroup", 1), ("cpu", 1), ("submittergroup", 1)
    ]  # fmt: skip
    assert groups[2]["minResource"] == {"cpu": "500m", "memory": "200Mi"}
    # The cluster's pods take the RayJob's groups from the cluster, which carries them.
    pod: dict[str, Any] = {"metadata": {}, "spec": {}}
    cluster = RayCluster.model_validate(child)
    add_child_metadata("yunikorn", parent=cluster, child_object=pod, kind="Pod", group_name="cpu")
    annotations = pod["metadata"]["annotations"]
    assert (
        annotations["yunikorn.apache.org/task-groups"]
        == (meta["annotations"]["yunikorn.apache.org/task-groups"])
    )
    assert annotations["yunikorn.apache.org/task-group-name"] == "cpu"
    assert pod["metadata"]["labels"]["applicationId"] == "a1"


def test_a_user_given_task_groups_annotation_wins() -> None:
    cluster = RayCluster.model_validate(
        {"metadata": {"name": "c", "labels": {"ray.io/gang-scheduling-enabled": "x"},
                      "annotations": {"yunikorn.apache.org/task-groups": "[mine]"}},
         "spec": rayjob().spec.ray_cluster_spec.to_dict()}  # type: ignore[union-attr]
    )  # fmt: skip
    pod: dict[str, Any] = {"metadata": {}, "spec": {}}
    add_child_metadata("yunikorn", parent=cluster, child_object=pod, kind="Pod", group_name="")
    assert pod["metadata"]["annotations"] == {"yunikorn.apache.org/task-groups": "[mine]"}


def test_a_raycluster_child_gets_no_scheduler_name() -> None:
    child: dict[str, Any] = {"metadata": {}, "spec": {}}
    add_child_metadata(
        "kai-scheduler", parent=rayjob(labels={"kai.scheduler/queue": "q"}),
        child_object=child, kind="RayCluster", group_name="",
    )  # fmt: skip
    assert child == {"metadata": {"labels": {"kai.scheduler/queue": "q"}}, "spec": {}}


def test_what_kuberay_refuses_at_submission() -> None:
    refuse_on_submission("kai-scheduler", rayjob("HTTPMode"))
    cluster = build_rayjob_cluster(job=rayjob(), cluster_name="train-abcde", job_id="j")
    refuse_on_submission("scheduler-plugins", RayCluster.model_validate(cluster))
    with pytest.raises(BatchSchedulerError, match="K8sJobMode"):
        refuse_on_submission("kai-scheduler", rayjob("K8sJobMode"))
    with pytest.raises(BatchSchedulerError, match="only RayCluster is supported"):
        refuse_on_submission("scheduler-plugins", rayjob("HTTPMode"))
    base = rayjob()
    selector = base.model_copy(
        update={"spec": base.spec.model_copy(update={"ray_cluster_spec": None})}
    )
    with pytest.raises(BatchSchedulerError, match="referencing an existing RayCluster"):
        volcano_pod_group_for(selector)


def test_a_bad_topology_tier_is_refused() -> None:
    job = rayjob(labels={"volcano.sh/network-topology-mode": "soft",
                         "volcano.sh/network-topology-highest-tier-allowed": "two"})  # fmt: skip
    with pytest.raises(BatchSchedulerError, match="failed to convert"):
        volcano_pod_group_for(job)


def test_min_resources_compare_by_amount_not_spelling() -> None:
    assert _same_quantities({"cpu": "1000m", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"})
    assert not _same_quantities({"cpu": "1"}, {"cpu": "1", "memory": "1Gi"})
    assert not _same_quantities(None, {"cpu": "1"})
    assert not _same_quantities({"cpu": "2"}, {"cpu": "1"})


def test_a_rendered_rayjob_starts_with_its_volcano_group_and_a_refusal_is_an_error() -> None:
    job = rayjob(labels={"volcano.sh/queue-name": "q"})
    objects, _ = render_rayjob(job=job, options=RenderOptions(batch_scheduler="volcano"))
    assert [o["kind"] for o in objects[:2]] == ["PodGroup", "RayCluster"]
    assert objects[0]["metadata"]["name"] == "ray-train-pg"
    pods = [o for o in objects if o["kind"] == "Pod"]
    assert pods and all(p["spec"]["schedulerName"] == "volcano" for p in pods)
    with pytest.raises(RenderError, match="only RayCluster is supported"):
        render_rayjob(job=job, options=RenderOptions(batch_scheduler="scheduler-plugins"))
