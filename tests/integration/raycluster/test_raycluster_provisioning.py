"""A RayCluster comes up: pods, head Service, status, conditions and metrics."""

from __future__ import annotations

import time

from hack.localcluster import LocalCluster
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.kinds import SERVICE
from tests.integration.raycluster.conftest import (
    RunningOperator,
    condition,
    get_cluster,
    live_pods,
    raycluster,
    running_ready,
)
from tests.waiting import wait_for


def test_one_head_and_five_workers_become_ready(
    operator: RunningOperator, client: KubeClient, namespace: str, ray_crds: LocalCluster
) -> None:
    started = time.monotonic()
    client.create(raycluster("demo", namespace, workers=5))

    def ready() -> bool:
        status = get_cluster(client, namespace, "demo").get("status") or {}
        return status.get("state") == "ready"

    wait_for("state ready", ready, timeout=60)
    time_to_ready = time.monotonic() - started
    print(f"time to ready (1 head + 5 workers): {time_to_ready:.2f}s")

    all_pods = live_pods(client, namespace, "demo")
    assert len(all_pods) == 6 and all(running_ready(p) for p in all_pods)
    assert len(live_pods(client, namespace, "demo", "head")) == 1
    obj = get_cluster(client, namespace, "demo")
    status = obj["status"]
    for type_, reason in (
        ("HeadPodReady", "HeadPodRunningAndReady"),
        ("RayClusterProvisioned", "AllPodRunningAndReadyFirstTime"),
    ):
        found = condition(obj, type_)
        assert found is not None and found["status"] == "True" and found["reason"] == reason
    assert condition(obj, "RayClusterSuspended")["status"] == "False"  # type: ignore[index]
    assert condition(obj, "ReplicaFailure") is None
    assert status["readyWorkerReplicas"] == 5
    assert status["availableWorkerReplicas"] == 5
    assert status["desiredWorkerReplicas"] == 5
    assert (status["minWorkerReplicas"], status["maxWorkerReplicas"]) == (0, 100)
    assert (status["desiredCPU"], status["desiredMemory"]) == ("6", "6Gi")
    assert status["observedGeneration"] == obj["metadata"]["generation"]
    assert "ready" in status["stateTransitionTimes"]

    head = live_pods(client, namespace, "demo", "head")[0]
    assert status["head"]["podName"] == head["metadata"]["name"]
    assert status["head"]["podIP"] == head["status"]["podIP"]
    # The head Service is headless: the service IP reported is the head pod's.
    assert status["head"]["serviceIP"] == head["status"]["podIP"]
    assert status["head"]["serviceName"] == "demo-head-svc"

    service = client.get(SERVICE, "demo-head-svc", namespace)
    assert service["spec"]["selector"] == {
        "app.kubernetes.io/created-by": "kuberay-operator",
        "app.kubernetes.io/name": "kuberay",
        "ray.io/cluster": "demo",
        "ray.io/identifier": "demo-head",
        "ray.io/node-type": "head",
    }
    ports = {p["name"]: p["port"] for p in service["spec"]["ports"]}
    assert ports == {
        "client": 10001,
        "dashboard": 8265,
        "gcs-server": 6379,
        "metrics": 8080,
        "serve": 8000,
    }
    assert service["spec"]["clusterIP"] == "None"
    assert status["endpoints"] == {name: str(port) for name, port in ports.items()}
    owner = service["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["uid"]) == ("RayCluster", obj["metadata"]["uid"])
    # The head Service selects exactly the head pod.
    selected = [
        p
        for p in live_pods(client, namespace, "demo")
        if all(p["metadata"]["labels"].get(k) == v for k, v in service["spec"]["selector"].items())
    ]
    assert [p["metadata"]["name"] for p in selected] == [head["metadata"]["name"]]

    labels = {"name": "demo", "namespace": namespace, "uid": obj["metadata"]["uid"]}
    # The operator records the duration once its status write has returned, so a test
    # that saw that status may sample a moment before the operator records it.
    duration = wait_for(
        "the provisioned duration recorded",
        lambda: operator.sample("kuberay_cluster_provisioned_duration_seconds", labels),
        timeout=10,
    )
    assert 0 < duration <= time_to_ready + 2
    assert operator.sample("kuberay_cluster_info", {**labels, "owner_kind": "None"}) == 1
    # Computed on scrape from the operator's cache, which the watch fills after the write.
    wait_for(
        "the provisioned condition metric true",
        lambda: (
            operator.sample(
                "kuberay_cluster_condition_provisioned", {**labels, "condition": "true"}
            )
            == 1
        ),
        timeout=10,
    )

    # A steady cluster costs no more status writes.
    version = obj["metadata"]["resourceVersion"]
    time.sleep(2.5)
    assert get_cluster(client, namespace, "demo")["metadata"]["resourceVersion"] == version
