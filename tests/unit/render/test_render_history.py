"""The history-server collector sidecar (gate RayClusterHistoryServer), shaped after
KubeRay v1.7.0's ``TestBuildCollectorContainerAndPodInjection`` (common/pod_test.go),
plus the rules of ``BuildCollectorContainer`` and ``BuildPod`` that test leaves out:
defaults, the user's values winning, the gate, and the owner env on all four kinds."""

from __future__ import annotations

import copy
import datetime
from typing import Any

import pytest

from operator_runtime.api import FeatureGates, RayCluster, RayJob, RayService
from operator_runtime.api.labels import NodeType
from operator_runtime.render import (
    PodParams,
    RenderOptions,
    build_cron_rayjob,
    build_pod,
    build_rayjob_cluster,
    build_rayservice_cluster,
)
from operator_runtime.render.history import (
    COLLECTOR_CONTAINER,
    EXPOSABLE_EVENT_TYPES,
    collector_container,
)

GATE_ON = RenderOptions(feature_gates=FeatureGates(ray_cluster_history_server=True))
FQDN = "test-cluster-head-svc.default.svc.cluster.local"
COLLECTOR: dict[str, Any] = {
    "image": "quay.io/kuberay/collector:latest",
    "env": [
        {"name": "STORAGE_BACKEND", "value": "GCS"},
        {"name": "GCS_BUCKET", "value": "my-bucket"},
    ],
}
EVENT_ENV = {
    "RAY_enable_ray_event": "true",
    "RAY_enable_core_worker_ray_event_to_aggregator": "true",
    "RAY_DASHBOARD_AGGREGATOR_AGENT_EVENTS_EXPORT_ADDR": "http://localhost:8084/v1/events",
    "RAY_DASHBOARD_AGGREGATOR_AGENT_EXPOSABLE_EVENT_TYPES": EXPOSABLE_EVENT_TYPES,
    "RAY_DASHBOARD_AGGREGATOR_AGENT_PUBLISHER_HTTP_ENDPOINT_EXPOSABLE_EVENT_TYPES": (
        EXPOSABLE_EVENT_TYPES
    ),
}


def cluster_spec(collector: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    options = {"collectorOptions": copy.deepcopy(collector or COLLECTOR)}
    return {
        "rayVersion": "2.52.1",
        "historyServerOptions": options,
        "headGroupSpec": {
            "rayStartParams": {},
            "template": {
                "spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:latest"}]}
            },
        },
        "workerGroupSpecs": [
            {
                "groupName": "worker-group",
                "rayStartParams": {},
                "template": {
                    "spec": {
                        "containers": [{"name": "ray-worker", "image": "rayproject/ray:latest"}]
                    }
                },
            }
        ],
        **extra,
    }


def make_cluster(
    labels: dict[str, str] | None = None, collector: dict[str, Any] | None = None, **extra: Any
) -> RayCluster:
    return RayCluster.model_validate(
        {
            "metadata": {"name": "test-cluster", "namespace": "default", "labels": labels or {}},
            "spec": cluster_spec(collector, **extra),
        }
    )


JOB_LABELS = {
    "ray.io/originated-from-crd": "RayJob",
    "ray.io/originated-from-cr-name": "test-rayjob",
}


def pods(
    cluster: RayCluster, options: RenderOptions = GATE_ON
) -> tuple[dict[str, Any], dict[str, Any]]:
    head = build_pod(params=PodParams(cluster=cluster, options=options))
    worker = build_pod(
        params=PodParams(
            cluster=cluster, node_type=NodeType.WORKER, group_name="worker-group", options=options
        )
    )
    return head, worker


def env_map(container: dict[str, Any]) -> dict[str, Any]:
    return {var["name"]: var.get("value", var.get("valueFrom")) for var in container["env"]}


def container_named(pod: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(c for c in pod["spec"]["containers"] if c["name"] == name)
    return found


def mounts(container: dict[str, Any]) -> dict[str, str]:
    return {m["name"]: m["mountPath"] for m in container.get("volumeMounts", [])}


def test_the_collector_container_carries_kuberays_env() -> None:
    cluster = make_cluster(JOB_LABELS)
    options = cluster.spec.history_server_options
    assert options is not None and options.collector_options is not None
    container = collector_container(
        options=options.collector_options, node_type=NodeType.HEAD, cluster=cluster, fqdn=FQDN
    )
    assert container["name"] == COLLECTOR_CONTAINER == "ray-history-collector"
    assert container["image"] == "quay.io/kuberay/collector:latest"
    env = env_map(container)
    assert list(env) == [
        "POD_IP", "RAY_CLUSTER_NAME", "RAY_CLUSTER_NAMESPACE", "RAY_ROLE", "EVENTS_PORT",
        "FQ_RAY_IP", "OWNER_KIND", "OWNER_NAME", "RAY_DASHBOARD_ADDRESS",
        "STORAGE_BACKEND", "GCS_BUCKET",
    ]  # fmt: skip
    assert env["POD_IP"] == {"fieldRef": {"fieldPath": "status.podIP"}}
    assert env["RAY_CLUSTER_NAME"] == "test-cluster"
    assert env["RAY_CLUSTER_NAMESPACE"] == "default"
    assert env["RAY_ROLE"] == "Head"
    assert env["EVENTS_PORT"] == "8084"
    assert env["FQ_RAY_IP"] == FQDN
    assert (env["OWNER_KIND"], env["OWNER_NAME"]) == ("RayJob", "test-rayjob")
    assert env["RAY_DASHBOARD_ADDRESS"] == "http://localhost:8265"


def test_head_and_worker_pods_share_tmp_ray_with_the_collector_and_export_events() -> None:
    head, worker = pods(make_cluster(JOB_LABELS))
    for pod, role in ((head, "Head"), (worker, "Worker")):
        names = [c["name"] for c in pod["spec"]["containers"]]
        assert names[1] == COLLECTOR_CONTAINER and len(names) == 2
        volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
        assert volumes["ray-logs"] == {"name": "ray-logs", "emptyDir": {}}
        ray, collector = pod["spec"]["containers"]
        assert mounts(ray)["ray-logs"] == "/tmp/ray"
        assert mounts(collector) == {"ray-logs": "/tmp/ray"}
        ray_env = env_map(ray)
        assert {name: ray_env.get(name) for name in EVENT_ENV} == EVENT_ENV
        # KubeRay appends them last, after RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE.
        assert [var["name"] for var in ray["env"]][-5:] == list(EVENT_ENV)
        assert env_map(collector)["RAY_ROLE"] == role
    assert "RAY_DASHBOARD_ADDRESS" in env_map(head["spec"]["containers"][1])
    assert "RAY_DASHBOARD_ADDRESS" not in env_map(worker["spec"]["containers"][1])
    assert env_map(worker["spec"]["containers"][1])["FQ_RAY_IP"] == FQDN


def test_defaults_pull_policy_and_resources() -> None:
    head, _ = pods(make_cluster())
    collector = head["spec"]["containers"][1]
    assert collector["imagePullPolicy"] == "IfNotPresent"
    assert collector["resources"] == {
        "limits": {"cpu": "200m", "memory": "256Mi"},
        "requests": {"cpu": "50m", "memory": "64Mi"},
    }
    # A plain RayCluster names no owner.
    assert not {"OWNER_KIND", "OWNER_NAME"} & set(env_map(collector))


def test_the_users_settings_win() -> None:
    collector = {
        **COLLECTOR,
        "imagePullPolicy": "Never",
        "resources": {"limits": {"cpu": "1"}},
        "env": [*COLLECTOR["env"], {"name": "RAY_DASHBOARD_ADDRESS", "value": "http://d:1"}],
    }
    cluster = make_cluster(collector=collector)
    cluster.spec.head_group_spec.template["spec"]["containers"][0]["env"] = [
        {"name": "RAY_enable_ray_event", "value": "false"},
        {"name": "RAY_DASHBOARD_AGGREGATOR_AGENT_EVENTS_EXPORT_ADDR", "value": "http://x/v1"},
    ]
    head, _ = pods(cluster)
    ray, sidecar = head["spec"]["containers"]
    assert sidecar["imagePullPolicy"] == "Never"
    assert sidecar["resources"] == {"limits": {"cpu": "1"}}
    names = [var["name"] for var in sidecar["env"]]
    assert names.count("RAY_DASHBOARD_ADDRESS") == 1
    assert env_map(sidecar)["RAY_DASHBOARD_ADDRESS"] == "http://d:1"
    ray_env = env_map(ray)
    assert ray_env["RAY_enable_ray_event"] == "false"
    assert ray_env["RAY_DASHBOARD_AGGREGATOR_AGENT_EVENTS_EXPORT_ADDR"] == "http://x/v1"
    assert [var["name"] for var in ray["env"]].count("RAY_enable_ray_event") == 1


def test_a_mount_at_tmp_ray_is_kept_and_no_volume_added() -> None:
    cluster = make_cluster()
    spec = cluster.spec.head_group_spec.template["spec"]
    spec["volumes"] = [{"name": "my-logs", "emptyDir": {}}]
    spec["containers"][0]["volumeMounts"] = [{"name": "my-logs", "mountPath": "/tmp/ray"}]
    head, _ = pods(cluster)
    ray, collector = head["spec"]["containers"]
    assert mounts(ray) == {"my-logs": "/tmp/ray", "shared-mem": "/dev/shm"}
    # As in KubeRay's addEmptyDir: the collector still gets ray-logs, a volume of its own.
    assert mounts(collector) == {"ray-logs": "/tmp/ray"}
    assert [v["name"] for v in head["spec"]["volumes"]] == ["my-logs", "shared-mem", "ray-logs"]


def test_with_the_gate_off_nothing_is_added() -> None:
    for pod in pods(make_cluster(JOB_LABELS), RenderOptions()):
        assert [c["name"] for c in pod["spec"]["containers"]] in (["ray-head"], ["ray-worker"])
        assert not set(EVENT_ENV) & set(env_map(pod["spec"]["containers"][0]))
        assert "ray-logs" not in {v["name"] for v in pod["spec"]["volumes"]}


def test_token_auth_reaches_the_collector() -> None:
    cluster = make_cluster(authOptions={"mode": "token"})
    head, worker = pods(cluster)
    for pod in (head, worker):
        env = env_map(pod["spec"]["containers"][1])
        assert env["RAY_AUTH_MODE"] == "token"
        assert env["RAY_AUTH_TOKEN"] == {
            "secretKeyRef": {"name": "test-cluster", "key": "auth_token"}
        }
        assert list(env)[-2:] == ["RAY_AUTH_MODE", "RAY_AUTH_TOKEN"]


def test_kubernetes_token_auth_mounts_the_token_in_the_collector() -> None:
    cluster = make_cluster(
        authOptions={"mode": "token", "enableK8sTokenAuth": True}, rayVersion="2.55.0"
    )
    head, _ = pods(cluster)
    collector = head["spec"]["containers"][1]
    assert env_map(collector)["RAY_ENABLE_K8S_TOKEN_AUTH"] == "true"
    assert mounts(collector) == {
        "ray-token": "/var/run/secrets/ray.io/serviceaccount",
        "ray-logs": "/tmp/ray",
    }


def test_the_collector_comes_before_the_operators_default_sidecars() -> None:
    options = RenderOptions(
        feature_gates=FeatureGates(ray_cluster_history_server=True),
        head_sidecar_containers=({"name": "fluent-bit", "image": "fb:1"},),
    )
    head, _ = pods(make_cluster(enableInTreeAutoscaling=True), options)
    names = [c["name"] for c in head["spec"]["containers"]]
    assert names == ["ray-head", "autoscaler", COLLECTOR_CONTAINER, "fluent-bit"]
    # One ray-logs volume, shared by the Ray container, the autoscaler and the collector.
    assert [v["name"] for v in head["spec"]["volumes"]].count("ray-logs") == 1
    for name in ("ray-head", "autoscaler", COLLECTOR_CONTAINER):
        assert mounts(container_named(head, name))["ray-logs"] == "/tmp/ray"


def test_a_container_named_like_the_collector_is_wired_as_kuberay_does() -> None:
    # KubeRay's BuildPod finds the collector by name, so a default sidecar of that name
    # gets /tmp/ray and the Ray container exports events, without historyServerOptions.
    options = RenderOptions(
        feature_gates=FeatureGates(ray_cluster_history_server=True),
        worker_sidecar_containers=({"name": COLLECTOR_CONTAINER, "image": "own:1"},),
    )
    cluster = make_cluster()
    cluster = cluster.model_copy(
        update={"spec": cluster.spec.model_copy(update={"history_server_options": None})}
    )
    _, worker = pods(cluster, options)
    ray, sidecar = worker["spec"]["containers"]
    assert mounts(sidecar) == {"ray-logs": "/tmp/ray"}
    assert env_map(ray)["RAY_enable_ray_event"] == "true"


def _job_document(name: str = "test-rayjob", mode: str = "K8sJobMode") -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name, "namespace": "default", "uid": "job-uid"},
        "spec": {
            "entrypoint": "python -c 'print(1)'",
            "submissionMode": mode,
            "rayClusterSpec": cluster_spec(),
        },
    }


def _from_job(document: dict[str, Any]) -> RayCluster:
    job = RayJob.model_validate(document)
    made = build_rayjob_cluster(job=job, cluster_name=f"{job.metadata.name}-x7k2p", job_id="id")
    return RayCluster.model_validate(made)


def _from_service() -> RayCluster:
    service = RayService.model_validate(
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayService",
            "metadata": {"name": "test-svc", "namespace": "default", "uid": "svc-uid"},
            "spec": {"rayClusterConfig": cluster_spec()},
        }
    )
    made = build_rayservice_cluster(service=service, cluster_name="test-svc-x7k2p")
    return RayCluster.model_validate(made)


def _from_cron() -> RayCluster:
    cron = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCronJob",
        "metadata": {"name": "nightly", "namespace": "default", "uid": "cron-uid"},
        "spec": {"schedule": "0 1 * * *", "jobTemplate": _job_document()["spec"]},
    }
    tick = datetime.datetime(2026, 11, 29, 1, 0, tzinfo=datetime.UTC)
    job = build_cron_rayjob(cron=cron, tick=tick)
    job["metadata"]["uid"] = "job-uid"
    return _from_job(job)


@pytest.mark.parametrize(
    ("kind", "made", "owner"),
    [
        ("RayCluster", lambda: make_cluster(), None),
        ("RayJob", lambda: _from_job(_job_document()), ("RayJob", "test-rayjob")),
        (
            "RayJob SidecarMode",
            lambda: _from_job(_job_document(mode="SidecarMode")),
            ("RayJob", "test-rayjob"),
        ),
        ("RayService", _from_service, ("RayService", "test-svc")),
        # A RayCronJob's cluster is its RayJob's: the owner env names that RayJob.
        ("RayCronJob", _from_cron, ("RayJob", "nightly-")),
    ],
)
def test_every_kind_names_its_owner(kind: str, made: Any, owner: tuple[str, str] | None) -> None:
    cluster = made()
    head, worker = pods(cluster)
    for pod in (head, worker):
        collector = container_named(pod, COLLECTOR_CONTAINER)
        env = env_map(collector)
        assert env["RAY_CLUSTER_NAME"] == cluster.metadata.name
        if owner is None:
            assert "OWNER_KIND" not in env and "OWNER_NAME" not in env
        else:
            assert env["OWNER_KIND"] == owner[0]
            assert env["OWNER_NAME"].startswith(owner[1])
        assert mounts(collector) == {"ray-logs": "/tmp/ray"}
    if kind == "RayJob SidecarMode":
        # The submitter is part of the head's template, so it comes before the collector.
        names = [c["name"] for c in head["spec"]["containers"]]
        assert names == ["ray-head", "ray-job-submitter", COLLECTOR_CONTAINER]
