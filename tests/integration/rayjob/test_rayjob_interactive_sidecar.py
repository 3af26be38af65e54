"""InteractiveMode and SidecarMode against the real control plane and a real Ray head.

InteractiveMode: the operator brings the cluster up and waits (``Waiting``) until the
user, having submitted a job to the head themselves, names it in ``spec.jobId``.

SidecarMode: the submitter is a container appended to the head pod. kwok runs no
container, so the test plays the kubelet for that one container: it writes the
container's end (exit code 1, no job ever submitted) into the head pod's status, or
runs the container's command for real against the real head (whose dashboard port the
head container declares, as the sidecar reaches it on localhost) and writes its real
exit code. Deleting the head pod takes the submitter with it. The SidecarSubmitterRestart
gate needs Kubernetes 1.35+: here (1.34) the operator refuses it at start; its restarts
are played on 1.36 (tests/integration/kubernetes136).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hack.localcluster import LocalCluster
from hack.localhttp import LOCAL_HTTP
from operator_runtime.api import RayJob
from operator_runtime.clients import DashboardPool, JobSubmission, direct_endpoint
from operator_runtime.render import SubmitterParams, submit_command
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.commandline import generic_version
from operator_runtime.runtime.kinds import POD, RAY_CLUSTER, RAY_JOB, Object
from tests.integration.rayjob.conftest import (
    ClusterHosts,
    job_status,
    operator,
    rayjob,
    reaches,
)
from tests.operatorprocess import START_SECONDS, STARTED
from tests.podrunner import expand
from tests.rayhead import RayHead
from tests.waiting import wait_for

SUBMITTER = "ray-job-submitter"


def _dashboard(head: RayHead) -> Any:
    return direct_endpoint(f"127.0.0.1:{head.dashboard_port}")


def _head_logs(head: RayHead, job_id: str) -> str:
    with DashboardPool() as pool:
        return pool.dashboard(_dashboard(head)).job_logs(job_id)


def test_interactive_waits_for_the_users_job_id(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str, ray_head: RayHead
) -> None:
    name, job_id, marker = "interactive", "mine-interactive-1", "submitted by hand"
    manifest = rayjob(name, namespace, ray_head, submissionMode="InteractiveMode")
    with ClusterHosts(kube, namespace), operator(ray_crds, namespace):
        kube.create(manifest)
        waiting = wait_for("Waiting", reaches(kube, namespace, name, "Waiting"), timeout=90)
        assert not waiting.get("jobId"), waiting  # InteractiveMode picks no id
        assert waiting["dashboardURL"].endswith(f":{ray_head.dashboard_port}")
        time.sleep(4)  # more than one requeue (3 s): still waiting without spec.jobId
        assert job_status(kube, namespace, name)["jobDeploymentStatus"] == "Waiting"

        # The user submits as `ray job submit` would, with its own patience: the
        # operator's 2 s deadline is the operator's, and a loaded head can take longer.
        submission = JobSubmission(entrypoint=f"echo '{marker}'", submission_id=job_id)
        answer = LOCAL_HTTP.post(
            f"{ray_head.dashboard_url}/api/jobs/", json=submission.body(), timeout=60
        )
        assert answer.status_code == 200, answer.text
        kube.patch(RAY_JOB, name, namespace, {"spec": {"jobId": job_id}})
        running = wait_for(
            "Running", reaches(kube, namespace, name, "Running", "Complete", "Failed"), timeout=30
        )
        assert running["jobId"] == job_id, running
        status = wait_for(
            "Complete", reaches(kube, namespace, name, "Complete", "Failed"), timeout=60
        )
    assert status["jobDeploymentStatus"] == "Complete", status
    assert status["jobStatus"] == "SUCCEEDED"
    assert status["jobId"] == job_id
    assert status["succeeded"] == 1 and status["failed"] == 0
    assert marker in _head_logs(ray_head, job_id)


def _sidecar_setup(kube: KubeClient, namespace: str, name: str) -> tuple[Object, Object]:
    """The RayJob's cluster once the RayJob is Running, and its head pod."""
    status = wait_for("Running", reaches(kube, namespace, name, "Running"), timeout=90)
    cluster = kube.get(RAY_CLUSTER, status["rayClusterName"], namespace)
    selector = f"ray.io/cluster={cluster['metadata']['name']},ray.io/node-type=head"
    pods = kube.list(POD, namespace, label_selector=selector)["items"]
    assert len(pods) == 1, [p["metadata"]["name"] for p in pods]
    return cluster, pods[0]


def _check_sidecar_cluster(
    kube: KubeClient, namespace: str, name: str, cluster: Object, head_pod: Object
) -> Object:
    """KubeRay's SidecarMode cluster: the annotation, restartPolicy Never, and the
    submitter container with the sidecar's command for this RayJob. Returns it."""
    assert cluster["metadata"]["annotations"]["ray.io/disable-provisioned-head-restart"] == "true"
    template = cluster["spec"]["headGroupSpec"]["template"]["spec"]
    assert template["restartPolicy"] == "Never"
    assert [c["name"] for c in template["containers"]] == ["ray-head", SUBMITTER]
    assert [c["name"] for c in head_pod["spec"]["containers"]] == ["ray-head", SUBMITTER]
    assert head_pod["spec"]["restartPolicy"] == "Never"
    sidecar: Object = template["containers"][1]
    job = kube.get(RAY_JOB, name, namespace)
    params = SubmitterParams(
        job=RayJob.model_validate(job), job_id=job["status"]["jobId"],
        dashboard_url=job["status"]["dashboardURL"],
    )  # fmt: skip
    assert sidecar["command"] == ["/bin/bash", "-ce", "--"]
    assert sidecar["args"] == [submit_command(params, sidecar=True)]
    address = f"http://127.0.0.1:{_port(cluster)}"
    assert (
        f"ray job submit --address {address} --submission-id {job['status']['jobId']} -- "
        in (sidecar["args"][0])
    )
    assert "--no-wait" not in sidecar["args"][0]  # the sidecar waits for the job
    return sidecar


def _port(cluster: Object) -> int:
    head = cluster["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    return int(next(p["containerPort"] for p in head["ports"] if p["name"] == "dashboard"))


def _patch_submitter(kube: KubeClient, pod: Object, **fields: Any) -> None:
    """Write ``fields`` into the submitter container's status, as a kubelet would (a
    merge patch replaces the list, so the head container's entry is sent as it is)."""
    statuses = [
        {**status, **fields} if status["name"] == SUBMITTER else status
        for status in pod["status"]["containerStatuses"]
    ]
    meta = pod["metadata"]
    kube.patch(POD, meta["name"], meta["namespace"], {"status": {"containerStatuses": statuses}},
               subresource="status")  # fmt: skip


def _terminated(exit_code: int, started_at: str) -> dict[str, Any]:
    reason = "Completed" if exit_code == 0 else "Error"
    return {"terminated": {"exitCode": exit_code, "reason": reason, "startedAt": started_at,
                           "finishedAt": _now()}}  # fmt: skip


def _end_submitter(kube: KubeClient, pod: Object, exit_code: int, started_at: str) -> None:
    """What a kubelet writes when the submitter container exits: the container's
    state becomes terminated (the pod stays Running: the head container runs on)."""
    _patch_submitter(kube, pod, ready=False, started=False,
                     state=_terminated(exit_code, started_at))  # fmt: skip


def _job_status_is(kube: KubeClient, namespace: str, name: str, wanted: str) -> Any:
    def check() -> dict[str, Any] | None:
        status = job_status(kube, namespace, name)
        return status if status.get("jobStatus") == wanted else None

    return check


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_sidecar_submitter_exiting_1_fails_the_submission(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str, ray_head: RayHead
) -> None:
    name = "sidecar-exit1"
    manifest = rayjob(name, namespace, ray_head, submissionMode="SidecarMode")
    with ClusterHosts(kube, namespace), operator(ray_crds, namespace):
        kube.create(manifest)
        cluster, head_pod = _sidecar_setup(kube, namespace, name)
        _check_sidecar_cluster(kube, namespace, name, cluster, head_pod)
        time.sleep(4)  # one requeue: the job is unknown to the head, the sidecar runs on
        assert job_status(kube, namespace, name)["jobDeploymentStatus"] == "Running"
        _end_submitter(kube, head_pod, 1, _now())
        status = wait_for(
            "Failed", reaches(kube, namespace, name, "Complete", "Failed"), timeout=30
        )
    assert status["jobDeploymentStatus"] == "Failed", status
    assert status["reason"] == "SubmissionFailed"
    assert status["message"] == (
        f"Ray head pod container {SUBMITTER} terminated with exit code 1: Error"
    )
    assert not status.get("jobStatus")
    assert status["failed"] == 1


def test_sidecar_head_pod_gone_fails_the_rayjob(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str, ray_head: RayHead
) -> None:
    """The submitter lived in the head pod: without it the job cannot be followed. The
    cluster's annotation keeps the RayCluster controller from making a new head."""
    name = "sidecar-nohead"
    manifest = rayjob(name, namespace, ray_head, submissionMode="SidecarMode")
    with ClusterHosts(kube, namespace), operator(ray_crds, namespace):
        kube.create(manifest)
        cluster, head_pod = _sidecar_setup(kube, namespace, name)
        kube.delete(POD, head_pod["metadata"]["name"], namespace)
        status = wait_for(
            "Failed", reaches(kube, namespace, name, "Complete", "Failed"), timeout=30
        )
        selector = f"ray.io/cluster={cluster['metadata']['name']},ray.io/node-type=head"
        heads = kube.list(POD, namespace, label_selector=selector)["items"]
    assert status["jobDeploymentStatus"] == "Failed", status
    assert status["reason"] == "AppFailed"
    assert status["message"] == "Ray head pod not found."
    assert status["failed"] == 1
    assert [p["metadata"]["name"] for p in heads] == []


def test_sidecar_restart_gate_refuses_to_start_below_kubernetes_1_35(
    ray_crds: LocalCluster, namespace: str
) -> None:
    """KubeRay v1.7.0's start-up check against this API server (1.34): with
    SidecarSubmitterRestart on, the operator exits 1 before any controller starts,
    naming the gate and the server's version. The gate's behaviour on 1.36 is
    tests/integration/kubernetes136/test_sidecar_submitter_restart.py."""
    version = ray_crds.server_version()
    assert generic_version(version) < (1, 35), f"this test needs a server below 1.35: {version}"
    refused = operator(ray_crds, namespace, "--feature-gates=SidecarSubmitterRestart=true")
    done = subprocess.run(refused.arguments, capture_output=True, text=True,
                          timeout=START_SECONDS, check=False)  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert (
        "ray-operator: the SidecarSubmitterRestart feature gate requires Kubernetes 1.35+: "
        f"the API server at {ray_crds.server} is {version}, below 1.35"
    ) in done.stderr
    assert STARTED not in done.stdout + done.stderr


def test_this_api_server_drops_a_containers_own_restart_policy(
    ray_crds: LocalCluster, namespace: str
) -> None:
    """Why the gate needs 1.35: on 1.34 (ContainerRestartRules alpha, off) the API
    server drops a regular container's ``restartPolicy``, so a submitter would never be
    restarted; 1.36's keeps it (tests/integration/kubernetes136)."""
    pod = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "restart-rules"},
        "spec": {"restartPolicy": "Never", "containers": [
            {"name": "ray-head", "image": "rayproject/ray:2.52.0"},
            {"name": SUBMITTER, "image": "rayproject/ray:2.52.0", "restartPolicy": "OnFailure"},
        ]},
    }  # fmt: skip
    created = ray_crds.kubectl("-n", namespace, "create", "--dry-run=server", "-o", "json",
                               "-f", "-", input=json.dumps(pod))  # fmt: skip
    containers = json.loads(created.stdout)["spec"]["containers"]
    assert [c.get("restartPolicy") for c in containers] == [None, None], ray_crds.server_version()


def _run_container(container: Object, log: Path) -> int:
    """Run one container's command + args as a kubelet would (``$(VAR)`` expanded from
    its literal env), with ``ray`` on PATH; returns the exit code."""
    declared: dict[str, str] = {}
    for variable in container.get("env") or []:
        if "valueFrom" not in variable:
            declared[variable["name"]] = expand(variable.get("value", ""), declared)
    argv = [expand(part, declared) for part in [*container["command"], *container["args"]]]
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    with log.open("wb") as out:
        done = subprocess.run(
            argv, env={**os.environ, "PATH": path, **declared}, stdin=subprocess.DEVNULL,
            stdout=out, stderr=subprocess.STDOUT, timeout=120, check=False,
        )  # fmt: skip
    return done.returncode


def test_sidecar_command_run_for_real_completes_the_rayjob(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str, ray_head: RayHead, tmp_path: Path
) -> None:
    name, marker = "sidecar-ok", "hello from the sidecar"
    manifest = rayjob(
        name, namespace, ray_head, submissionMode="SidecarMode",
        entrypoint=f"python -c \"print('{marker}')\"",
    )  # fmt: skip
    with ClusterHosts(kube, namespace), operator(ray_crds, namespace):
        started = time.monotonic()
        kube.create(manifest)
        cluster, head_pod = _sidecar_setup(kube, namespace, name)
        sidecar = _check_sidecar_cluster(kube, namespace, name, cluster, head_pod)
        sidecar_started = _now()
        log = tmp_path / "sidecar.log"
        exit_code = _run_container(sidecar, log)
        output = log.read_text(errors="replace")
        assert exit_code == 0, output
        # The Ray job succeeded, but the submitter has not ended as far as the API says:
        # the RayJob stays Running (KubeRay waits for the submitter's finishedAt).
        seen = wait_for("jobStatus SUCCEEDED", _job_status_is(kube, namespace, name, "SUCCEEDED"))
        assert seen["jobDeploymentStatus"] == "Running", seen
        _end_submitter(kube, head_pod, exit_code, sidecar_started)
        status = wait_for(
            "Complete", reaches(kube, namespace, name, "Complete", "Failed"), timeout=30
        )
        elapsed = time.monotonic() - started
    print(f"\nSidecarMode: RayJob created -> Complete in {elapsed:.1f} s")
    assert status["jobDeploymentStatus"] == "Complete", status
    assert status["jobStatus"] == "SUCCEEDED"
    assert status["succeeded"] == 1
    assert marker in output  # `ray job submit` without --no-wait follows the logs
    assert marker in _head_logs(ray_head, status["jobId"])
