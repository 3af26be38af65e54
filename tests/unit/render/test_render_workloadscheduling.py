"""The KubernetesWAS gate's objects and pod fields, and which existing object is stale, as
KubeRay v1.7.0's kubernetes-was scheduler decides them (its unit tests' cases; the whole
rendered cluster is the golden case ``kubernetes-was-gang``)."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from operator_runtime.api import FeatureGates, RayCluster, RayJob
from operator_runtime.api.labels import NodeType
from operator_runtime.controllers.rendering import render_options
from operator_runtime.render import (
    PodParams,
    RenderOptions,
    SubmitterParams,
    add_render_arguments,
    build_pod,
    build_rayjob_cluster,
    build_submitter_job,
    render_settings,
)
from operator_runtime.render.batchscheduler import chosen_scheduler, pod_groups
from operator_runtime.render.workloadscheduling import (
    KUBERNETES_WAS,
    SKIP_AUTOSCALING,
    SKIP_NOT_ENABLED,
    build_pod_group,
    build_workload,
    min_count,
    pod_group_stale,
    scheduling_objects,
    skip_reason,
    workload_stale,
)
from operator_runtime.runtime.settings import OperatorEnvironment

WAS = RenderOptions(feature_gates=FeatureGates(kubernetes_was=True), batch_scheduler=KUBERNETES_WAS)
LABEL = "ray.io/gang-scheduling-enabled"


def group(name: str = "workers", replicas: int = 3, hosts: int = 1, **extra: Any) -> dict[str, Any]:
    return {
        "groupName": name, "replicas": replicas, "minReplicas": replicas,
        "maxReplicas": replicas, "numOfHosts": hosts, "rayStartParams": {},
        "template": {"spec": {"containers": [{"name": "w", "image": "rayproject/ray:2.52.0"}]}},
        **extra,
    }  # fmt: skip


def cluster(*groups: dict[str, Any], label: str | None = "true", **spec: Any) -> RayCluster:
    labels = {LABEL: label} if label is not None else {}
    return RayCluster.model_validate({
        "metadata": {"name": "test-cluster", "namespace": "default", "uid": "test-cluster-uid",
                     "labels": labels},
        "spec": {
            "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {
                "containers": [{"name": "ray-head", "image": "rayproject/ray:2.52.0"}]}}},
            "workerGroupSpecs": list(groups),
            **spec,
        },
    })  # fmt: skip


def test_the_gate_alone_selects_the_scheduler() -> None:
    assert chosen_scheduler("", False, kubernetes_was=True) == KUBERNETES_WAS
    assert chosen_scheduler("", False) == ""
    assert chosen_scheduler("volcano", False) == "volcano"


def test_workload_and_pod_group_names_owner_and_template() -> None:
    workload, pod_group = scheduling_objects(cluster(group()))
    assert (workload["kind"], workload["metadata"]["name"]) == ("Workload", "test-cluster")
    assert (pod_group["kind"], pod_group["metadata"]["name"]) == (
        "PodGroup",
        "test-cluster-cluster",
    )
    for made in (workload, pod_group):
        assert made["apiVersion"] == "scheduling.k8s.io/v1alpha2"
        assert made["metadata"]["labels"] == {"ray.io/cluster": "test-cluster"}
        (owner,) = made["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["uid"]) == (
            "RayCluster", "test-cluster", "test-cluster-uid"
        )  # fmt: skip
        assert owner["controller"] is True
    assert workload["spec"]["controllerRef"] == {
        "apiGroup": "ray.io", "kind": "RayCluster", "name": "test-cluster"
    }  # fmt: skip
    # MinCount = 1 head + 3 worker replicas.
    assert workload["spec"]["podGroupTemplates"] == [
        {"name": "cluster", "schedulingPolicy": {"gang": {"minCount": 4}}}
    ]
    assert pod_group["spec"] == {
        "podGroupTemplateRef": {
            "workload": {"workloadName": "test-cluster", "podGroupTemplateName": "cluster"}
        },
        "schedulingPolicy": {"gang": {"minCount": 4}},
    }


@pytest.mark.parametrize(
    ("groups", "expected"),
    [
        ((), 1),
        ((group("workers", 3),), 4),
        ((group("group-a", 1), group("group-b", 2)), 4),
        ((group("workers", 3, hosts=2),), 7),
        ((group("workers", 1, suspend=True),), 1),
    ],
    ids=["head only", "head plus replicas", "groups summed", "times hosts", "suspended group"],
)
def test_min_count_is_the_head_plus_every_desired_worker(
    groups: tuple[dict[str, Any], ...], expected: int
) -> None:
    assert min_count(cluster(*groups)) == expected


def test_many_worker_groups_are_still_one_template() -> None:
    """One whole-cluster template, so no cap at the API's 8 templates per Workload."""
    many = cluster(*(group(f"group-{i}", 1) for i in range(10)))
    workload = build_workload(many)
    (template,) = workload["spec"]["podGroupTemplates"]
    assert template == {"name": "cluster", "schedulingPolicy": {"gang": {"minCount": 11}}}


@pytest.mark.parametrize(
    ("label", "expected"),
    [(None, SKIP_NOT_ENABLED), ("false", SKIP_NOT_ENABLED), ("False", SKIP_NOT_ENABLED),
     ("foo", SKIP_NOT_ENABLED), ("", SKIP_NOT_ENABLED), ("true", ""), ("True", "")],
)  # fmt: skip
def test_only_a_cluster_labelled_true_gets_a_gang(label: str | None, expected: str) -> None:
    assert skip_reason(cluster(group(), label=label)) == expected


def test_an_autoscaling_cluster_is_skipped() -> None:
    autoscaled = cluster(group(), enableInTreeAutoscaling=True)
    assert skip_reason(autoscaled) == SKIP_AUTOSCALING
    assert scheduling_objects(autoscaled) == []
    assert pod_groups(autoscaled, KUBERNETES_WAS) == []


def test_pod_groups_lists_the_workload_first() -> None:
    kinds = [made["kind"] for made in pod_groups(cluster(group()), KUBERNETES_WAS)]
    assert kinds == ["Workload", "PodGroup"]


@pytest.mark.parametrize("node_type", ["head", "worker"])
def test_every_pod_keeps_the_default_scheduler_and_names_the_pod_group(node_type: str) -> None:
    made = cluster(group())
    kind = NodeType(node_type)
    params = PodParams(cluster=made, options=WAS, node_type=kind, group_name="workers")
    plain = build_pod(params=PodParams(cluster=made, node_type=kind, group_name="workers"))
    pod = build_pod(params=params)
    assert pod["spec"]["schedulerName"] == "default-scheduler"
    assert pod["spec"]["schedulingGroup"] == {"podGroupName": "test-cluster-cluster"}
    # Nothing else changes: no label, no annotation (the other schedulers add theirs).
    assert pod["metadata"] == plain["metadata"]
    rest = {k: v for k, v in pod["spec"].items() if k not in ("schedulerName", "schedulingGroup")}
    assert rest == {k: v for k, v in plain["spec"].items() if k != "schedulerName"}


@pytest.mark.parametrize("label", [None, "false"])
def test_a_skipped_clusters_pods_are_left_as_rendered(label: str | None) -> None:
    for made in (cluster(group(), label=label), cluster(group(), enableInTreeAutoscaling=True)):
        pod = build_pod(params=PodParams(cluster=made, options=WAS))
        plain = build_pod(params=PodParams(cluster=made))
        assert pod == plain
        assert "schedulingGroup" not in pod["spec"]


def test_a_rayjobs_children_are_not_stamped() -> None:
    """KubeRay's plugin acts on a RayCluster parent only: a RayJob's submitter and the
    RayCluster it makes get nothing from it (the cluster's own pods do, if labelled)."""
    job = RayJob.model_validate({
        "metadata": {"name": "job", "namespace": "default", "uid": "job-uid",
                     "labels": {LABEL: "true"}},
        "spec": {"entrypoint": "python x.py",
                 "rayClusterSpec": cluster(group()).spec.model_dump(by_alias=True,
                                                                    exclude_none=True)},
    })  # fmt: skip
    params = SubmitterParams(job=job, job_id="job-x", dashboard_url="h:8265", options=WAS)
    submitter = build_submitter_job(params=params)
    assert "schedulingGroup" not in submitter["spec"]["template"]["spec"]
    made = build_rayjob_cluster(job=job, cluster_name="job-abcde", job_id="job-x", options=WAS)
    assert "schedulerName" not in str(made)


def _workload_of(*groups: dict[str, Any]) -> dict[str, Any]:
    return dict(build_workload(cluster(*groups)))


@pytest.mark.parametrize(
    ("desired_groups", "stale"),
    [
        ((group("workers", 3),), False),
        ((group("workers", 3), group("gpu", 1)), True),
        ((), True),
        ((group("renamed", 3),), False),
        ((group("workers", 5),), True),
        ((group("workers", 3, hosts=2),), True),
    ],
    ids=["no change", "group added", "group removed", "renamed, same total",
         "replicas changed", "hosts changed"],
)  # fmt: skip
def test_workload_stale(desired_groups: tuple[dict[str, Any], ...], stale: bool) -> None:
    existing = _workload_of(group("workers", 3))
    assert workload_stale(existing, build_workload(cluster(*desired_groups))) is stale


def test_a_workload_of_another_shape_is_stale() -> None:
    desired = build_workload(cluster(group()))
    template = {"name": "cluster", "schedulingPolicy": {"gang": {"minCount": 4}}}
    assert workload_stale({"spec": {"podGroupTemplates": [template, template]}}, desired)
    assert workload_stale({"spec": {"podGroupTemplates": [{**template, "name": "x"}]}}, desired)
    basic = {"name": "cluster", "schedulingPolicy": {"basic": {}}}
    assert workload_stale({"spec": {"podGroupTemplates": [basic]}}, desired)
    assert workload_stale({}, desired)


def test_pod_group_stale_only_on_another_gang_size() -> None:
    desired = build_pod_group(cluster(group()))
    assert not pod_group_stale(dict(desired), desired)
    assert pod_group_stale({"spec": {"schedulingPolicy": {"gang": {"minCount": 3}}}}, desired)
    assert pod_group_stale({"spec": {"schedulingPolicy": {"basic": {}}}}, desired)
    assert pod_group_stale({}, desired)


def test_the_operator_and_the_render_command_select_it_from_the_gate() -> None:
    gates = FeatureGates(kubernetes_was=True)
    options = render_options(OperatorEnvironment.defaults(), gates)
    assert options.batch_scheduler == KUBERNETES_WAS
    assert render_options(OperatorEnvironment.defaults()).batch_scheduler == ""
    parser = argparse.ArgumentParser()
    add_render_arguments(parser)
    rendered, _ = render_settings(parser.parse_args(["--feature-gates", "KubernetesWAS=true"]))
    assert rendered.batch_scheduler == KUBERNETES_WAS
