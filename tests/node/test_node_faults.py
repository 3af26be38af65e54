"""The operator and its Ray pods under node faults, on the real node, under both
operators: the operator's container killed (SIGKILL through containerd) while it scales
a cluster up, and the kubelet restarted while a cluster runs. Neither may cost a Ray
pod or make one twice."""

from __future__ import annotations

import time
from typing import Any

import pytest

from hack.localcluster import LocalCluster
from operator_runtime.runtime.kinds import POD
from tests.kubeclient import shared_client
from tests.node.harness import (
    all_ready,
    cluster_spec,
    operators,
    pod_states,
    pods,
    ray_container,
    real_node,
    server_side_apply,
)
from tests.waiting import wait_for
from tests.watching import Recorder

OPERATORS = operators(compared_in_make_test=False)
"""KubeRay's side of these scenarios runs under ``make node-compare``."""

PENDING = 20
KILLED = "ray.io/cluster=killed"
SETTLE_SECONDS = 10.0
"""After the last pod: long enough for a restarted operator's resync to show a second
pod it should not make (it reconciles every cluster at start)."""
RAY_READY_SECONDS = 420.0
"""As in test_ray_on_the_node.py: a head and two workers Ready on two loaded cores."""
OPERATOR_BACK_SECONDS = 120.0
"""The kubelet restarts a killed container at once the first time (back-off starts at
10 s after that), and the operator takes its Lease again within its lease duration."""


def operator_pod(cluster: LocalCluster, namespace: str) -> dict[str, Any]:
    """The operator's pod: the one pod in the namespace that is not a Ray pod."""
    (found,) = pods(cluster, namespace, "!ray.io/cluster")
    return found


def container_id(pod: dict[str, Any]) -> str:
    (status,) = pod["status"]["containerStatuses"]
    return str(status["containerID"]).removeprefix("containerd://")


def restarts(pod: dict[str, Any]) -> int:
    return sum(int(c.get("restartCount", 0)) for c in pod["status"]["containerStatuses"])


def uids_and_restarts(cluster: LocalCluster, namespace: str, name: str) -> dict[str, int]:
    found = pods(cluster, namespace, f"ray.io/cluster={name}")
    return {p["metadata"]["uid"]: restarts(p) for p in found}


def test_the_operator_killed_mid_scale_up_makes_each_pod_once(
    real_cluster: LocalCluster, ray_namespace: str, request: pytest.FixtureRequest
) -> None:
    ns, operator = ray_namespace, request.node.callspec.params["ray_namespace"]
    kube = shared_client(real_cluster)
    before = operator_pod(real_cluster, ns)
    spec = cluster_spec(0)
    # Twenty workers no node takes: both operators make a cluster's pods in one burst,
    # and a burst this long is one the kill can land in; Pending, they cost nothing.
    spec["workerGroupSpecs"] = [{
        "groupName": "pending", "replicas": PENDING, "minReplicas": 0, "maxReplicas": PENDING,
        "rayStartParams": {},
        "template": {"spec": {"nodeSelector": {"example.com/no-such-node": "true"},
                              "containers": [ray_container("ray-worker")]}},
    }]  # fmt: skip
    with Recorder(kube, POD, ns, label_selector=KILLED) as made:
        server_side_apply(real_cluster, ns, {
            "apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "killed"},
            "spec": spec,
        })  # fmt: skip
        wait_for("the operator's first pod of the cluster", lambda: made.events, timeout=60,
                 interval=0.01)  # fmt: skip
        real_node(real_cluster).ctr("tasks", "kill", "--signal", "SIGKILL", container_id(before))
        at_kill = len(made.events)
        wait_for(
            "the operator's container restarted and Ready",
            lambda: restarts(after := operator_pod(real_cluster, ns)) > restarts(before)
            and all_ready([after], 1),
            timeout=OPERATOR_BACK_SECONDS, interval=1.0,
        )  # fmt: skip
        wait_for("the head Ready and every worker made",
                 lambda: all_ready(pods(real_cluster, ns, f"{KILLED},ray.io/node-type=head"), 1)
                 and len(pods(real_cluster, ns, KILLED)) == 1 + PENDING,
                 timeout=RAY_READY_SECONDS, interval=2.0,
                 explain=lambda: pod_states(real_cluster, ns))  # fmt: skip
        settle_until = made.events[-1].at + SETTLE_SECONDS
        wait_for("a quiet spell after the last pod", lambda: time.monotonic() > settle_until,
                 timeout=SETTLE_SECONDS + 5, interval=0.5)  # fmt: skip
    created = [e.object["metadata"]["name"] for e in made.events if e.type == "ADDED"]
    print(f"\n{operator}: killed with {at_kill} of {1 + PENDING} pods made; "
          f"made in all {len(created)}")  # fmt: skip
    assert len(created) == len(set(created)) == 1 + PENDING, created
    assert not [e for e in made.events if e.type == "DELETED"]


def test_a_kubelet_restart_recreates_no_ray_pod(
    real_cluster: LocalCluster, ray_namespace: str, request: pytest.FixtureRequest
) -> None:
    ns, operator = ray_namespace, request.node.callspec.params["ray_namespace"]
    server_side_apply(real_cluster, ns, {
        "apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "steady"},
        "spec": cluster_spec(1),
    })  # fmt: skip
    wait_for("the head and a worker Ready",
             lambda: all_ready(pods(real_cluster, ns, "ray.io/cluster=steady"), 2),
             timeout=RAY_READY_SECONDS, interval=2.0,
             explain=lambda: pod_states(real_cluster, ns))  # fmt: skip
    before = uids_and_restarts(real_cluster, ns, "steady")
    real_node(real_cluster).restart_kubelet(real_cluster)
    wait_for("the Ray pods Ready again after the kubelet's restart",
             lambda: all_ready(pods(real_cluster, ns, "ray.io/cluster=steady"), 2),
             timeout=RAY_READY_SECONDS, interval=2.0,
             explain=lambda: pod_states(real_cluster, ns))  # fmt: skip
    after = uids_and_restarts(real_cluster, ns, "steady")
    print(f"\n{operator}: Ray pods (uid: restarts) before {before}, after {after}")
    assert after == before
