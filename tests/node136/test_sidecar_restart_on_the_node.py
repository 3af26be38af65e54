"""SidecarSubmitterRestart with a real container: on a kubelet of 1.36, our operator (a
real pod, the gate on) puts a SidecarMode RayJob's submitter in the head pod with its own
``restartPolicy: OnFailure``; the test kills the submitter's process in the middle of
the job (as KubeRay's e2e stops it with ``crictl stop``), the kubelet restarts that one
container and not the pod, the restarted submitter finds the job already submitted
(``ray job status``) and follows its logs to the end, and the RayJob completes: one job,
submitted once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hack.localcluster import LocalCluster
from hack.localcluster.versions import KUBERNETES_1_36
from tests.kubeclient import fresh_namespace
from tests.node.harness import (
    cluster_spec,
    deploy_operator,
    pod_states,
    pods,
    real_node,
    server_side_apply,
)
from tests.waiting import wait_for

SUBMITTER = "ray-job-submitter"
GATES = {"SidecarSubmitterRestart": True}
JOB_SECONDS = 600.0
"""From the RayJob's create to its end on two loaded cores: a Ray head starts (GCS,
raylet, dashboard), the submitter submits, the job sleeps, the submitter restarts."""
RESTART_SECONDS = 120.0
"""From the kill to the kubelet's restart of the container: its back-off starts at 10 s."""
MARKER = "the job ran to its end"


def _submitter(pod: dict[str, Any]) -> dict[str, Any]:
    statuses = pod.get("status", {}).get("containerStatuses") or []
    return next((s for s in statuses if s["name"] == SUBMITTER), {})


def test_the_kubelet_restarts_a_killed_submitter_and_the_job_completes_once(
    real_cluster_136: LocalCluster, tmp_path: Path
) -> None:
    cluster = real_cluster_136
    assert cluster.server_version() == KUBERNETES_1_36
    with (
        fresh_namespace(cluster, prefix="ray") as ns,
        deploy_operator(cluster, ns, tmp_path, feature_gates=GATES),
    ):
        name = "sidecar-restart"
        server_side_apply(cluster, ns, {
            "apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": name},
            "spec": {
                "entrypoint": "python -c \"import time; time.sleep(45); "
                              f"print('{MARKER}')\"",
                "submissionMode": "SidecarMode",
                "rayClusterSpec": cluster_spec(0),
            },
        })  # fmt: skip

        def head() -> dict[str, Any] | None:
            found = pods(cluster, ns, "ray.io/node-type=head")
            return found[0] if found else None

        def job_running() -> dict[str, Any] | None:
            status = cluster.get_json("-n", ns, "rayjob", name).get("status", {})
            pod = head()
            running = pod is not None and "running" in _submitter(pod).get("state", {})
            return pod if status.get("jobStatus") == "RUNNING" and running else None

        pod = wait_for("the job RUNNING beside its submitter", job_running,
                       timeout=JOB_SECONDS, interval=2.0,
                       explain=lambda: pod_states(cluster, ns))  # fmt: skip
        spec = next(c for c in pod["spec"]["containers"] if c["name"] == SUBMITTER)
        assert spec["restartPolicy"] == "OnFailure"
        assert pod["spec"]["restartPolicy"] == "Never"
        killed = _submitter(pod)
        assert killed["restartCount"] == 0, killed
        container_id = killed["containerID"].removeprefix("containerd://")
        real_node(cluster).ctr("task", "kill", "--signal", "SIGKILL", container_id)

        def restarted() -> dict[str, Any] | None:
            pod = head()
            status = _submitter(pod) if pod is not None else {}
            return pod if status.get("restartCount", 0) >= 1 else None

        pod = wait_for("the kubelet to restart the submitter", restarted,
                       timeout=RESTART_SECONDS, interval=1.0,
                       explain=lambda: _submitter(head() or {}))  # fmt: skip
        last = _submitter(pod)["lastState"]["terminated"]
        assert last["exitCode"] == 137, last  # SIGKILL: a failure, so OnFailure restarts it
        ray_head = next(c for c in pod["status"]["containerStatuses"] if c["name"] == "ray-head")
        assert ray_head["restartCount"] == 0, "only the submitter restarts"

        def finished() -> dict[str, Any] | None:
            status = cluster.get_json("-n", ns, "rayjob", name).get("status", {})
            return status if status.get("jobDeploymentStatus") in ("Complete", "Failed") else None

        status = wait_for("the RayJob to finish", finished, timeout=JOB_SECONDS, interval=2.0,
                          explain=lambda: pod_states(cluster, ns))  # fmt: skip
        assert status["jobDeploymentStatus"] == "Complete", status
        assert status["jobStatus"] == "SUCCEEDED", status
        again = cluster.kubectl("-n", ns, "logs", pod["metadata"]["name"], "-c", SUBMITTER).stdout
        # The restarted submitter found the job (`ray job status`) and followed it to its
        # end: no second submission. (The killed run's own log is not kept to read: the
        # kubelet answers "unable to retrieve container logs" for it.)
        assert "submitted successfully" not in again, again[-3000:]
        assert MARKER in again, again[-3000:]
