"""The policy pack's rules on wire-form documents, as yaml/v2 or a Helm chart hands them over.

Pure logic: no engine, no pulumi_policy. The same rules through the real engine are in
tests/e2e/test_policy_pack.py.
"""

from __future__ import annotations

import copy
from typing import Any

from components.policy import (
    PolicyCode,
    api_lines,
    delete_self_lines,
    gpu_lines,
    image_lines,
    limit_lines,
    pod_templates,
)
from operator_runtime.api import InvalidObjectError
from operator_runtime.api.validation import load_object


def _container(image: str = "rayproject/ray:2.52.1", gpus: int = 0) -> dict[str, Any]:
    limits: dict[str, Any] = {"cpu": "1", "memory": "2Gi"}
    if gpus:
        limits["nvidia.com/gpu"] = gpus
    return {"name": "ray", "image": image, "resources": {"limits": limits}}


def _cluster(**worker: Any) -> dict[str, Any]:
    group = {
        "groupName": "gpu",
        "replicas": 2,
        "minReplicas": 0,
        "maxReplicas": 4,
        "rayStartParams": {},
        "template": {"spec": {"containers": [_container(gpus=2)]}},
        **worker,
    }
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "demo", "namespace": "team-a"},
        "spec": {
            "headGroupSpec": {
                "rayStartParams": {},
                "template": {"spec": {"containers": [_container()]}},
            },
            "workerGroupSpecs": [group],
        },
    }


def _job(cluster_spec: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "nightly", "namespace": "team-a"},
        "spec": {"entrypoint": "python job.py", "rayClusterSpec": cluster_spec, **spec},
    }


def test_a_valid_cluster_passes_every_rule() -> None:
    cluster = _cluster()
    assert api_lines(cluster) == []
    assert image_lines(cluster, ["rayproject/"]) == []
    assert gpu_lines(cluster, per_group=8, per_cluster=8) == []
    assert limit_lines(cluster, ["cpu", "memory"]) == []


def test_api_lines_are_the_lines_the_components_report() -> None:
    cluster = _cluster()
    cluster["spec"]["workerGroupSpecs"][0]["replicsa"] = 3  # a typo, as in hand-written YAML
    cluster["spec"]["workerGroupSpecs"][0]["minReplicas"] = 5
    try:
        load_object(cluster)
    except InvalidObjectError as error:
        expected = list(error.lines())
    else:
        raise AssertionError("load_object accepted a bad cluster")
    lines = api_lines(cluster)
    assert lines == expected
    assert any("[FIELD_UNKNOWN]" in line and "replicsa" in line for line in lines), lines
    assert all(line.startswith("RayCluster team-a/demo: ") for line in lines), lines


def test_image_allow_list_names_each_container_outside_it() -> None:
    cluster = _cluster()
    cluster["spec"]["workerGroupSpecs"][0]["template"]["spec"]["initContainers"] = [
        {"name": "fetch", "image": "docker.io/busybox"}
    ]
    lines = image_lines(cluster, ["rayproject/", "registry.example.com/ray/"])
    assert lines == [
        "RayCluster team-a/demo: spec.workerGroupSpecs[0].template.spec.initContainers[0]"
        ".image: image 'docker.io/busybox' is not from an allowed registry; use an image "
        "under one of: rayproject/, registry.example.com/ray/ [POLICY_IMAGE_NOT_ALLOWED]"
    ]
    assert image_lines(cluster, []) == []


def test_gpu_caps_count_what_a_group_can_reach() -> None:
    static = _cluster()  # no autoscaler: 2 replicas x 2 GPUs = 4
    assert gpu_lines(static, per_group=4, per_cluster=4) == []
    assert [
        PolicyCode.GPU_GROUP_CAP.value in line
        for line in gpu_lines(static, per_group=3, per_cluster=None)
    ] == [True]
    autoscaled = _cluster(numOfHosts=2)
    autoscaled["spec"]["enableInTreeAutoscaling"] = True  # 4 max replicas x 2 hosts x 2
    lines = gpu_lines(autoscaled, per_group=8, per_cluster=15)
    assert len(lines) == 2, lines
    assert "group gpu can take 16 GPUs (2 per pod x 8 pods)" in lines[0]
    assert lines[1].endswith(
        "the cluster can take 16 GPUs; stay at or below 15 per cluster [POLICY_GPU_CLUSTER_CAP]"
    )


def test_a_gpu_group_without_a_bound_is_reported() -> None:
    cluster = _cluster()
    cluster["spec"]["enableInTreeAutoscaling"] = True
    del cluster["spec"]["workerGroupSpecs"][0]["maxReplicas"]
    lines = gpu_lines(cluster, per_group=100, per_cluster=None)
    assert len(lines) == 1 and "[POLICY_GPU_UNBOUNDED_GROUP]" in lines[0], lines


def test_limits_are_required_on_every_container_of_every_kind() -> None:
    cluster = _cluster()
    head = cluster["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    del head["resources"]["limits"]["memory"]
    service = {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": "serve"},
        "spec": {"rayClusterConfig": copy.deepcopy(cluster["spec"])},
    }
    assert limit_lines(cluster, ["cpu", "memory"]) == [
        "RayCluster team-a/demo: spec.headGroupSpec.template.spec.containers[0].resources"
        ".limits: container 'ray' sets no memory limit; set resources.limits.memory "
        "[POLICY_LIMIT_MISSING]"
    ]
    lines = limit_lines(service, ["cpu", "memory"])
    assert len(lines) == 1 and lines[0].startswith(
        "RayService serve: spec.rayClusterConfig.headGroupSpec"
    ), lines


def test_pod_templates_of_a_cronjob_include_its_submitter() -> None:
    job = _job(_cluster()["spec"], submitterPodTemplate={"spec": {"containers": [_container()]}})
    cron = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCronJob",
        "metadata": {"name": "cron"},
        "spec": {"schedule": "@daily", "jobTemplate": job["spec"]},
    }
    assert [t.path for t in pod_templates(cron)] == [
        "spec.jobTemplate.rayClusterSpec.headGroupSpec.template",
        "spec.jobTemplate.rayClusterSpec.workerGroupSpecs[0].template",
        "spec.jobTemplate.submitterPodTemplate",
    ]


def test_delete_self_is_refused_in_legacy_policies_and_rules() -> None:
    rules = _job(
        _cluster()["spec"],
        deletionStrategy={
            "deletionRules": [
                {"policy": "DeleteCluster", "condition": {"jobStatus": "FAILED"}},
                {"policy": "DeleteSelf", "condition": {"jobStatus": "SUCCEEDED"}},
            ]
        },
    )
    legacy = _job(
        _cluster()["spec"],
        deletionStrategy={
            "onSuccess": {"policy": "DeleteSelf"},
            "onFailure": {"policy": "DeleteNone"},
        },
    )
    assert delete_self_lines(rules) == [
        "RayJob team-a/nightly: spec.deletionStrategy.deletionRules[1].policy: DeleteSelf "
        "deletes the RayJob itself, and its history with it; use DeleteCluster or "
        "DeleteWorkers [POLICY_DELETE_SELF]"
    ]
    assert [line.split(": ")[1] for line in delete_self_lines(legacy)] == [
        "spec.deletionStrategy.onSuccess.policy"
    ]
    assert delete_self_lines(_cluster()) == []


def test_rules_survive_documents_that_do_not_parse() -> None:
    broken: dict[str, Any] = {
        "kind": "RayCluster",
        "metadata": {"name": "x"},
        "spec": {"workerGroupSpecs": ["not a group", {"template": 3}]},
    }
    assert image_lines(broken, ["rayproject/"]) == []
    assert gpu_lines(broken, per_group=1, per_cluster=1) == []
    assert limit_lines(broken, ["cpu"]) == []
    assert api_lines(broken), "a document that does not parse must be reported by the API rule"
