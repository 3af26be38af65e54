"""Focused rules of the pod, service, RBAC and naming builders."""

from __future__ import annotations

from typing import Any

import pytest

from operator_runtime.api import RayCluster
from operator_runtime.api.labels import NodeType
from operator_runtime.render import (
    OPERATOR_PERMISSIONS,
    ClusterRoleParams,
    PodParams,
    RenderError,
    RenderOptions,
    ServiceParams,
    build_head_service,
    build_operator_cluster_role,
    build_pod,
    build_serve_service,
    check_label,
    check_name,
    desired_worker_replicas,
    pod_name,
)
from operator_runtime.render._podfinish import command_string
from operator_runtime.render.containers import supports_unified_health_check


def cluster(
    *,
    head: dict[str, Any] | None = None,
    worker: dict[str, Any] | None = None,
    annotations: dict[str, str] | None = None,
    **spec: Any,
) -> RayCluster:
    head_container = {"name": "ray-head", "image": "ray:2.52.0", **(head or {})}
    worker_container = {"name": "ray-worker", "image": "ray:2.52.0", **(worker or {})}
    return RayCluster.model_validate(
        {
            "metadata": {"name": "c", "namespace": "ns", "annotations": annotations or {}},
            "spec": {
                "rayVersion": "2.52.0",
                "headGroupSpec": {"template": {"spec": {"containers": [head_container]}}},
                "workerGroupSpecs": [
                    {"groupName": "g", "template": {"spec": {"containers": [worker_container]}}}
                ],
                **spec,
            },
        }
    )


def ray_container(pod: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = pod["spec"]["containers"][0]
    return container


def worker_pod(c: RayCluster, **kw: Any) -> dict[str, Any]:
    return build_pod(params=PodParams(cluster=c, node_type=NodeType.WORKER, group_name="g", **kw))


# --- names -----------------------------------------------------------------------------


def test_check_name_keeps_the_tail_and_fixes_the_first_character() -> None:
    assert check_name("a" * 60) == "a" * 50
    assert check_name("x" * 10 + "-" + "b" * 49) == "r" + "b" * 49
    assert check_name("1abc") == "rabc"
    assert check_name("short") == "short"


def test_check_label_keeps_63_and_fixes_punctuation_only() -> None:
    assert check_label("a" * 70) == "a" * 63
    assert check_label("1abc") == "1abc"
    assert check_label(".abc") == "rabc"


def test_pod_name_prefix_is_the_head_of_the_name_lowercased() -> None:
    assert pod_name("A" * 60, NodeType.WORKER, generate=True) == "a" * 50 + "-worker-"
    assert pod_name("c", NodeType.HEAD, generate=False) == "c-head"


# --- pods ------------------------------------------------------------------------------


def test_command_rewrite_keeps_user_command_in_front() -> None:
    pod = build_pod(params=PodParams(cluster=cluster(head={"command": ["a"], "args": ["b c"]})))
    args = ray_container(pod)["args"][0]
    assert args.startswith(" a  b c  && ulimit -n ${RAY_START_ULIMIT_OPEN_FILES:-65536}; ray start")
    assert ray_container(pod)["command"] == ["/bin/bash", "-c", "--"]
    assert command_string(["x", "y"]) == " x  y "


@pytest.mark.parametrize(
    ("head", "annotations"),
    [
        ({"args": ["ray start --head"]}, {}),
        ({"command": ["my-entry"]}, {"ray.io/overwrite-container-cmd": "TRUE"}),
    ],
)
def test_command_rewrite_skipped(head: dict[str, Any], annotations: dict[str, str]) -> None:
    pod = build_pod(params=PodParams(cluster=cluster(head=head, annotations=annotations)))
    container = ray_container(pod)
    assert container.get("command") == head.get("command")
    assert container.get("args") == head.get("args")
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["KUBERAY_GEN_RAY_START_CMD"].startswith("ray start --head ")


def test_login_shell_option() -> None:
    pod = build_pod(
        params=PodParams(cluster=cluster(), options=RenderOptions(enable_login_shell=True))
    )
    assert ray_container(pod)["command"] == ["/bin/bash", "-cl", "--"]


@pytest.mark.parametrize(
    ("resources", "size"),
    [
        ({"limits": {"memory": "2Gi"}, "requests": {"memory": "1Gi"}}, "2Gi"),
        ({"requests": {"memory": "1Gi"}}, "1Gi"),
        ({}, None),
    ],
)
def test_shared_memory_sized_to_limit_then_request(
    resources: dict[str, Any], size: str | None
) -> None:
    pod = worker_pod(cluster(worker={"resources": resources}))
    volume = next(v for v in pod["spec"]["volumes"] if v["name"] == "shared-mem")
    assert volume["emptyDir"].get("sizeLimit") == size
    assert volume["emptyDir"]["medium"] == "Memory"


def test_shared_memory_skipped_for_plasma_directory_or_existing_mount() -> None:
    c = cluster(worker={"volumeMounts": [{"name": "x", "mountPath": "/dev/shm"}]})
    assert "shared-mem" not in str(worker_pod(c)["spec"].get("volumes"))
    c2 = RayCluster.model_validate(
        {
            **cluster().to_dict(),
            "spec": {
                **cluster().to_dict()["spec"],
                "workerGroupSpecs": [
                    {
                        "groupName": "g",
                        "rayStartParams": {"plasma-directory": "/p"},
                        "template": {"spec": {"containers": [{"name": "w", "image": "i"}]}},
                    }
                ],
            },
        }
    )
    assert "volumes" not in worker_pod(c2)["spec"]


def test_probe_kind_follows_ray_version() -> None:
    assert supports_unified_health_check("2.53.0")
    assert supports_unified_health_check("2.53")
    assert supports_unified_health_check("v3.0.0rc1")
    assert not supports_unified_health_check("2.52.9")
    assert not supports_unified_health_check("nightly")
    assert not supports_unified_health_check(None)
    assert not supports_unified_health_check("2")


def test_user_probes_are_kept() -> None:
    probe = {"tcpSocket": {"port": 1}}
    pod = build_pod(params=PodParams(cluster=cluster(head={"livenessProbe": probe})))
    assert ray_container(pod)["livenessProbe"] == probe
    assert "exec" in ray_container(pod)["readinessProbe"]


def test_metrics_port_added_once() -> None:
    ports = [{"name": "metrics", "containerPort": 9999}]
    pod = build_pod(params=PodParams(cluster=cluster(head={"ports": ports})))
    assert ray_container(pod)["ports"] == ports


def test_env_order_for_a_worker_with_default_envs() -> None:
    options = RenderOptions(
        default_container_envs=({"name": "A", "value": "1"}, {"name": "MINE", "value": "no"})
    )
    c = cluster(worker={"env": [{"name": "MINE", "value": "yes"}]})
    names = [e["name"] for e in ray_container(worker_pod(c, options=options))["env"]]
    assert names == [
        "MINE", "A", "FQ_RAY_IP", "RAY_IP", "RAY_CLUSTER_NAME", "RAY_CLUSTER_NAMESPACE",
        "RAY_CLOUD_INSTANCE_ID", "RAY_NODE_TYPE_NAME", "KUBERAY_GEN_RAY_START_CMD",
        "RAY_PORT", "RAY_ADDRESS", "RAY_USAGE_STATS_KUBERAY_IN_USE",
        "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE",
    ]  # fmt: skip


def test_init_container_copies_user_env_before_operator_env() -> None:
    c = cluster(worker={"env": [{"name": "MINE", "value": "1"}]})
    init = worker_pod(c)["spec"]["initContainers"][0]
    assert [e["name"] for e in init["env"]] == ["MINE", "FQ_RAY_IP", "RAY_IP"]
    assert init["resources"]["requests"] == {"cpu": "200m", "memory": "256Mi"}


def test_protected_labels_cannot_be_overridden() -> None:
    c = cluster()
    template = c.spec.head_group_spec.template
    template["metadata"] = {"labels": {"ray.io/cluster": "x", "ray.io/is-ray-node": "custom"}}
    labels = build_pod(params=PodParams(cluster=c))["metadata"]["labels"]
    assert labels["ray.io/cluster"] == "c"
    assert labels["ray.io/is-ray-node"] == "custom"


def test_multi_host_labels_are_inputs() -> None:
    c = cluster()
    pod = worker_pod(c, replica_index=3, replica_name="g-xyz12", host_index=1)
    labels = pod["metadata"]["labels"]
    assert labels["ray.io/worker-group-replica-index"] == "3"
    assert "ray.io/worker-group-replica-name" not in labels  # numOfHosts == 1


def test_unknown_group_is_a_render_error() -> None:
    with pytest.raises(RenderError, match="no worker group 'nope'"):
        build_pod(params=PodParams(cluster=cluster(), node_type=NodeType.WORKER, group_name="nope"))


def test_desired_replicas_clamp() -> None:
    group = cluster().spec.worker_group_specs[0]  # type: ignore[index]
    assert desired_worker_replicas(group.model_copy(update={"replicas": 5, "max_replicas": 2})) == 2
    assert desired_worker_replicas(group.model_copy(update={"replicas": 0, "min_replicas": 1})) == 1
    assert desired_worker_replicas(group.model_copy(update={"replicas": 3, "suspend": True})) == 0


# --- services and RBAC -------------------------------------------------------------------


def test_head_service_default_ports_and_headless() -> None:
    service = build_head_service(params=ServiceParams(cluster=cluster()))
    assert [p["name"] for p in service["spec"]["ports"]] == [
        "client", "dashboard", "gcs-server", "metrics", "serve",
    ]  # fmt: skip
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["publishNotReadyAddresses"] is True


def test_head_service_cluster_ip_when_asked_or_not_cluster_ip_type() -> None:
    options = RenderOptions(head_cluster_ip_service=True)
    service = build_head_service(params=ServiceParams(cluster=cluster(), options=options))
    assert "clusterIP" not in service["spec"]
    node_port = cluster()
    node_port = node_port.model_copy(
        update={
            "spec": node_port.spec.model_copy(
                update={
                    "head_group_spec": node_port.spec.head_group_spec.model_copy(
                        update={"service_type": "LoadBalancer"}
                    )
                }
            )
        }
    )
    spec = build_head_service(params=ServiceParams(cluster=node_port))["spec"]
    assert spec["type"] == "LoadBalancer" and "clusterIP" not in spec


def test_serve_service_needs_a_serve_port() -> None:
    with pytest.raises(RenderError, match="serve"):
        ports = [{"name": "gcs-server", "containerPort": 6379}]
        build_serve_service(params=ServiceParams(cluster=cluster(head={"ports": ports})))


def test_operator_cluster_role_is_rendered_from_the_table() -> None:
    role = build_operator_cluster_role(params=ClusterRoleParams())
    rules = role["rules"]
    granted = {
        (group, resource, verb)
        for rule in rules
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    wanted = {(p.group, r, v) for p in OPERATOR_PERMISSIONS for r in p.resources for v in p.verbs}
    assert granted == wanted
    # The autoscaler Role's grants must be a subset of the operator's (RBAC escalation).
    for need in [
        ("", "pods", "patch"),
        ("", "pods/resize", "patch"),
        ("ray.io", "rayclusters", "patch"),
    ]:
        assert need in granted
    assert rules == sorted(rules, key=lambda r: (r["apiGroups"], r["verbs"]))


def test_cluster_role_for_some_controllers_only() -> None:
    role = build_operator_cluster_role(params=ClusterRoleParams(controllers=frozenset({"manager"})))
    assert {g for rule in role["rules"] for g in rule["apiGroups"]} == {
        "", "coordination.k8s.io", "events.k8s.io",
    }  # fmt: skip
