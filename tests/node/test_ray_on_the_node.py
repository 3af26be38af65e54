"""Ray as users run it, on the real node, reconciled by the operator as a real pod:
a head and two workers Ready by their real probes with three alive nodes in ``ray
status`` and tasks on all three; a RayJob in K8sJobMode and in HTTPMode to Complete with
its output and its cluster deleted; a RayCluster with the history-server collector
(gate ``RayClusterHistoryServer``, on for our operator in this module) whose sidecars
run beside Ray, read its logs and receive its events. A RayService answering through
``<name>-serve-svc`` from another pod is where test_rayservice_under_traffic.py begins.

The Ray image is the stand-in ``make ray-image`` builds (``hack/image/ray``). Each Ray
container asks for 200m of the node's two cores, with a limit of one core (the operator
derives ``--num-cpus`` from the limit, as KubeRay does), so a head, two workers and a
submitter fit.
"""

from __future__ import annotations

import json
import textwrap
from typing import Any

import pytest

from hack.image.collector import COLLECTOR_IMAGE
from hack.localcluster import LocalCluster
from hack.raystatus import ray_status
from operator_runtime.runtime.kinds import RAY_CLUSTER, RAY_JOB
from tests.kubeclient import shared_client
from tests.node.harness import (
    all_ready,
    cluster_spec,
    gone,
    operators,
    pod_states,
    pods,
    server_side_apply,
)
from tests.waiting import wait_for

OPERATORS = operators(compared_in_make_test=False)
FEATURE_GATES = {"RayClusterHistoryServer": True}
"""Our operator's gates here: only a cluster with ``historyServerOptions`` (the last
scenario's) is rendered differently with it on."""

RAY_READY_SECONDS = 420.0
"""From a RayCluster's create to every Ray pod Ready on two loaded cores: three Ray
nodes start (GCS, raylet, dashboard and its agent each) and the workers wait for the
head's GCS first. Measured: see benchmarks/README.md."""
JOB_SECONDS = 600.0


def test_a_head_and_two_workers_run_tasks_on_three_nodes(
    real_cluster: LocalCluster, ray_namespace: str
) -> None:
    ns = ray_namespace
    server_side_apply(
        real_cluster,
        ns,
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "metadata": {"name": "three"},
            "spec": cluster_spec(2),
        },
    )
    wait_for(
        "the head and two workers Ready by their probes",
        lambda: all_ready(pods(real_cluster, ns, "ray.io/cluster=three"), 3),
        timeout=RAY_READY_SECONDS, interval=2.0, explain=lambda: pod_states(real_cluster, ns),
    )  # fmt: skip
    (head,) = pods(real_cluster, ns, "ray.io/cluster=three,ray.io/node-type=head")
    head_name = head["metadata"]["name"]

    seen: list[str] = []

    def alive_nodes() -> int:
        status = ray_status(real_cluster, ns, head_name, "ray-head")
        seen[:] = [status.output[-2000:]]
        return status.alive

    wait_for("three alive nodes in `ray status`", lambda: alive_nodes() == 3, timeout=120,
             interval=2.0, explain=lambda: seen)  # fmt: skip
    program = textwrap.dedent("""
        import ray
        ray.init()
        @ray.remote(num_cpus=1)
        def where():
            import time
            time.sleep(2)
            return ray.get_runtime_context().get_node_id()
        spread = where.options(scheduling_strategy="SPREAD")
        print("nodes", len(set(ray.get([spread.remote() for _ in range(6)]))))
    """)
    ran = real_cluster.kubectl("-n", ns, "exec", head_name, "-c", "ray-head", "--",
                               "python", "-c", program, timeout=300).stdout  # fmt: skip
    assert "nodes 3" in ran, ran


@pytest.mark.parametrize("mode", ["K8sJobMode", "HTTPMode"])
def test_a_rayjob_runs_to_complete_and_its_cluster_goes(
    real_cluster: LocalCluster, ray_namespace: str, mode: str
) -> None:
    ns, name = ray_namespace, f"job-{mode.lower()}"
    server_side_apply(real_cluster, ns, {
        "apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": name},
        "spec": {
            "entrypoint": "python -c \"import ray; ray.init(); "
                          "print('job says', int(ray.cluster_resources()['CPU']))\"",
            "submissionMode": mode,
            "shutdownAfterJobFinishes": True,
            "rayClusterSpec": cluster_spec(0),
        },
    })  # fmt: skip

    def finished() -> dict[str, Any] | None:
        status = shared_client(real_cluster).get(RAY_JOB, name, ns).get("status", {})
        return status if status.get("jobDeploymentStatus") in ("Complete", "Failed") else None

    status = wait_for(f"the {mode} RayJob to finish", finished, timeout=JOB_SECONDS,
                      interval=2.0, explain=lambda: pod_states(real_cluster, ns))  # fmt: skip
    assert status["jobDeploymentStatus"] == "Complete", status
    assert status["jobStatus"] == "SUCCEEDED", status
    if mode == "K8sJobMode":
        logs = real_cluster.kubectl("-n", ns, "logs", f"job/{name}").stdout
        assert "job says 1" in logs, logs[-3000:]
    cluster_name = status["rayClusterName"]
    wait_for(
        "the RayJob's cluster to be deleted",
        lambda: gone(real_cluster, ns, RAY_CLUSTER, cluster_name),
        timeout=120, interval=1.0,
    )  # fmt: skip


COLLECTOR = "ray-history-collector"
EVENTS_SECONDS = 120.0
"""From the driver's end to its events at the collectors: the core workers report to
their node's dashboard agent about every second, and the agent posts each batch within
0.1 s, retrying with backoff of at most 5 s; the rest is for a loaded machine."""
DRIVER = textwrap.dedent("""
    import ray
    ray.init()
    @ray.remote(num_cpus=1)
    def where():
        import time
        time.sleep(1)
        return ray.get_runtime_context().get_node_id()
    @ray.remote(num_cpus=0)
    class Counter:
        def add(self, n):
            return n + 1
    spread = where.options(scheduling_strategy="SPREAD")
    nodes = set(ray.get([spread.remote() for _ in range(4)]))
    counter = Counter.remote()
    print("nodes", len(nodes), "actor", ray.get(counter.add.remote(1)))
""")
EXPECTED_EVENTS = {
    # What the core workers send to their own node's dashboard agent: the driver's task
    # definitions and every task attempt's lifecycle and profile, on the node that ran it.
    # TASK_PROFILE_EVENT is off in Ray's own default exposable types: it arrives because
    # the operator's env lists it. The GCS's own events (node, job, actor) reach the head's
    # collector only in some runs (docs/conformance.md), so they are not waited for.
    "head": {"TASK_DEFINITION_EVENT", "TASK_LIFECYCLE_EVENT", "TASK_PROFILE_EVENT"},
    "worker": {"TASK_LIFECYCLE_EVENT", "TASK_PROFILE_EVENT"},
}
KUBERAY_EXPOSABLE_TYPES = {
    "TASK_DEFINITION_EVENT", "TASK_LIFECYCLE_EVENT", "ACTOR_TASK_DEFINITION_EVENT",
    "TASK_PROFILE_EVENT", "DRIVER_JOB_DEFINITION_EVENT", "DRIVER_JOB_LIFECYCLE_EVENT",
    "ACTOR_DEFINITION_EVENT", "ACTOR_LIFECYCLE_EVENT", "NODE_DEFINITION_EVENT",
    "NODE_LIFECYCLE_EVENT",
}  # fmt: skip
"""KubeRay v1.7.0's ``DEFAULT_RAY_EXPOSABLE_EVENT_TYPES``."""
STATUS = (
    "import urllib.request; "
    "print(urllib.request.urlopen('http://localhost:8084/status', timeout=10).read().decode())"
)


def _collector_status(cluster: LocalCluster, namespace: str, pod: str) -> dict[str, Any]:
    """What the stand-in collector (``hack/image/collector/server.py``) has seen, asked
    from inside its own container."""
    ran = cluster.kubectl("-n", namespace, "exec", pod, "-c", COLLECTOR, "--",
                          "python3.11", "-c", STATUS, timeout=60)  # fmt: skip
    status: dict[str, Any] = json.loads(ran.stdout)
    return status


def test_the_history_collector_runs_beside_ray_reads_its_logs_and_gets_its_events(
    real_cluster: LocalCluster, ray_namespace: str, request: pytest.FixtureRequest
) -> None:
    ns = ray_namespace
    spec = cluster_spec(1)
    spec["historyServerOptions"] = {"collectorOptions": {
        "image": COLLECTOR_IMAGE,
        "env": [{"name": "STORAGE_BACKEND", "value": "S3"},
                {"name": "S3_REGION", "value": "us-east-1"},
                {"name": "S3_BUCKET", "value": "ray-history"}],
    }}  # fmt: skip
    server_side_apply(real_cluster, ns, {
        "apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "hist"},
        "spec": spec,
    })  # fmt: skip
    wait_for(
        "the head and the worker Ready",
        lambda: all_ready(pods(real_cluster, ns, "ray.io/cluster=hist"), 2),
        timeout=RAY_READY_SECONDS, interval=2.0, explain=lambda: pod_states(real_cluster, ns),
    )  # fmt: skip
    by_role = {p["metadata"]["labels"]["ray.io/node-type"]: p
               for p in pods(real_cluster, ns, "ray.io/cluster=hist")}  # fmt: skip
    if request.node.callspec.params["ray_namespace"] != "ours":
        # KubeRay v1.6.2 predates historyServerOptions: it adds no collector.
        for pod in by_role.values():
            assert [c["name"] for c in pod["spec"]["containers"]] == [
                pod["spec"]["containers"][0]["name"]
            ]
        return
    head_name, worker_name = (
        by_role["head"]["metadata"]["name"],
        by_role["worker"]["metadata"]["name"],
    )
    for role, pod in by_role.items():
        running = {c["name"]: (c["ready"], c["restartCount"], "running" in c["state"])
                   for c in pod["status"]["containerStatuses"]}  # fmt: skip
        ray_name = f"ray-{role}"
        assert running == {ray_name: (True, 0, True), COLLECTOR: (True, 0, True)}, running
    ran = real_cluster.kubectl("-n", ns, "exec", head_name, "-c", "ray-head", "--",
                               "python", "-c", DRIVER, timeout=300).stdout  # fmt: skip
    assert "nodes 2 actor 2" in ran, ran
    seen: dict[str, dict[str, Any]] = {}

    def events_arrived() -> bool:
        for role, name in (("head", head_name), ("worker", worker_name)):
            seen[role] = _collector_status(real_cluster, ns, name)
        return all(EXPECTED_EVENTS[role] <= set(seen[role]["events"]) for role in seen)

    wait_for("Ray's events at both collectors", events_arrived, timeout=EVENTS_SECONDS,
             interval=2.0, explain=lambda: {r: s["events"] for r, s in seen.items()})  # fmt: skip
    print("\ncollector events:", {role: s["events"] for role, s in seen.items()}, flush=True)
    grep = "grep -ih aggregat /tmp/ray/session_latest/logs/gcs_server.out | tail -5"
    gcs_says = real_cluster.kubectl("-n", ns, "exec", head_name, "-c", "ray-head", "--",
                                    "bash", "-c", grep, check=False).stdout  # fmt: skip
    print("the GCS on its event aggregator:", gcs_says, flush=True)
    for role, status in seen.items():
        env = status["env"]
        assert (env["RAY_ROLE"], env["RAY_CLUSTER_NAME"], env["RAY_CLUSTER_NAMESPACE"]) == (
            role.capitalize(),
            "hist",
            ns,
        )
        assert env["STORAGE_BACKEND"] == "S3" and env["EVENTS_PORT"] == "8084"
        assert env["POD_IP"] == by_role[role]["status"]["podIP"]
        # Ray's agent drops what the exposable types (the operator's env) leave out.
        assert set(status["events"]) <= KUBERAY_EXPOSABLE_TYPES, status["events"]
        # Ray's own logs, written by the Ray container, read from the shared /tmp/ray.
        logs = [f for f in status["files"] if "/logs/" in f]
        assert any(f.endswith("/logs/raylet.out") for f in logs), status["files"][:50]
    assert any(f.endswith("/logs/gcs_server.out") for f in seen["head"]["files"])
    assert seen["head"]["env"]["RAY_DASHBOARD_ADDRESS"] == "http://localhost:8265"
    assert seen["worker"]["env"]["RAY_DASHBOARD_ADDRESS"] is None
