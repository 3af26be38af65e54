"""Ray as users run it, on the real node, reconciled by the operator as a real pod:
a head and two workers Ready by their real probes with three alive nodes in ``ray
status`` and tasks on all three; a RayJob in K8sJobMode and in HTTPMode to Complete with
its output and its cluster deleted; a RayService whose Serve app answers through
``<name>-serve-svc`` from another pod.

The Ray image is the stand-in ``make ray-image`` builds (``hack/image/ray``). Each Ray
container asks for 200m of the node's two cores, with a limit of one core (the operator
derives ``--num-cpus`` from the limit, as KubeRay does), so a head, two workers and a
submitter fit.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from hack.localcluster import LocalCluster
from hack.raystatus import ray_status
from tests.node.harness import (
    OPERATOR_IMAGE,
    all_ready,
    cluster_spec,
    operators,
    pod_states,
    pods,
    server_side_apply,
)
from tests.waiting import wait_for

OPERATORS = operators(compared_in_make_test=False)

RAY_READY_SECONDS = 420.0
"""From a RayCluster's create to every Ray pod Ready on two loaded cores: three Ray
nodes start (GCS, raylet, dashboard and its agent each) and the workers wait for the
head's GCS first. Measured: see benchmarks/README.md."""
JOB_SECONDS = 600.0
SERVE_SECONDS = 600.0

SERVE_APP = textwrap.dedent("""
    from ray import serve

    @serve.deployment(num_replicas=1, ray_actor_options={"num_cpus": 0})
    class Echo:
        async def __call__(self, request):
            return "echo from serve"

    app = Echo.bind()
""")


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
        status = real_cluster.get_json("-n", ns, "rayjob", name).get("status", {})
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
        lambda: real_cluster.kubectl("-n", ns, "get", "raycluster", cluster_name,
                                     check=False).returncode != 0,
        timeout=120, interval=1.0,
    )  # fmt: skip


def test_a_rayservice_answers_through_its_serve_service(
    real_cluster: LocalCluster, ray_namespace: str, tmp_path: Path
) -> None:
    ns = ray_namespace
    app = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "echo-app"},
           "data": {"echo.py": SERVE_APP}}  # fmt: skip
    server_side_apply(real_cluster, ns, app)
    mounted = {
        "volumeMounts": [{"name": "app", "mountPath": "/home/ray/app"}],
        "env": [{"name": "PYTHONPATH", "value": "/home/ray/app"}],
    }
    spec = cluster_spec(0, **mounted)
    spec["headGroupSpec"]["template"]["spec"]["volumes"] = [
        {"name": "app", "configMap": {"name": "echo-app"}}
    ]
    serve_config = "applications:\n- name: echo\n  import_path: echo:app\n  route_prefix: /\n"
    server_side_apply(real_cluster, ns, {
        "apiVersion": "ray.io/v1", "kind": "RayService", "metadata": {"name": "echo"},
        "spec": {"serveConfigV2": serve_config, "rayClusterConfig": spec},
    })  # fmt: skip

    def running() -> bool:
        conditions = real_cluster.get_json("-n", ns, "rayservice", "echo").get(
            "status", {}).get("conditions", [])  # fmt: skip
        return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

    wait_for("the RayService to be Ready", running, timeout=SERVE_SECONDS, interval=2.0,
             explain=lambda: pod_states(real_cluster, ns))  # fmt: skip
    client = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "serve-client"},
        "spec": {"restartPolicy": "Never", "containers": [{
            "name": "client", "image": OPERATOR_IMAGE, "imagePullPolicy": "IfNotPresent",
            "command": ["python3.11", "-c",
                        "import urllib.request; print(urllib.request.urlopen("
                        f"'http://echo-serve-svc.{ns}.svc.cluster.local:8000/', timeout=10)"
                        ".read().decode())"],
        }]},
    }  # fmt: skip
    server_side_apply(real_cluster, ns, client)
    wait_for(
        "the client pod to finish",
        lambda: real_cluster.get_json("-n", ns, "pod", "serve-client")["status"].get("phase")
        in ("Succeeded", "Failed"),
        timeout=120, interval=1.0,
    )  # fmt: skip
    logs = real_cluster.kubectl("-n", ns, "logs", "serve-client").stdout
    assert "echo from serve" in logs, logs
