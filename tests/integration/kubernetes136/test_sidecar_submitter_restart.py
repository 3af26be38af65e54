"""SidecarSubmitterRestart on Kubernetes 1.36, where it belongs (KubeRay v1.7.0 refuses
the gate below 1.35; ``rayjob/test_rayjob_interactive_sidecar.py`` shows ours refusing on
1.34).

The submitter container of a SidecarMode head pod gets its own ``restartPolicy:
OnFailure`` (the pod's stays ``Never``): 1.36's API server keeps it, where 1.34's drops
it. kwok runs no container, so the test plays the kubelet for the submitter as the
other SidecarMode tests do, writing its restarts and terminations into the head pod's
status: one failed run and a restart is not the end, the second restart of a failing
submitter (the default backoffLimit, 2) is, with KubeRay's message; and an exit 0 after
as many restarts is not a failure: the job, submitted once by the restarted submitter
(here by the test, under the RayJob's id, against the real Ray head), completes.
"""

from __future__ import annotations

import time

from hack.localcluster import LocalCluster
from hack.localhttp import LOCAL_HTTP
from operator_runtime.clients import JobSubmission
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.kinds import POD, Object
from tests.integration.rayjob.conftest import (
    ClusterHosts,
    job_status,
    operator,
    rayjob,
    reaches,
)
from tests.integration.rayjob.test_rayjob_interactive_sidecar import (
    SUBMITTER,
    _job_status_is,
    _now,
    _patch_submitter,
    _sidecar_setup,
    _terminated,
)
from tests.rayhead import RayHead
from tests.waiting import wait_for

GATE = "--feature-gates=SidecarSubmitterRestart=true"
REQUEUE_SECONDS = 4
"""More than one of the RayJob controller's requeues (3 s) while it is Running."""


def _restarted_once(kube: KubeClient, namespace: str, name: str, head: RayHead) -> Object:
    """The RayJob Running with its head pod, whose submitter (its own ``restartPolicy:
    OnFailure``, kept by this API server) has failed once and been restarted; the head
    pod as it is then."""
    kube.create(rayjob(name, namespace, head, submissionMode="SidecarMode"))
    cluster, head_pod = _sidecar_setup(kube, namespace, name)
    sidecar = cluster["spec"]["headGroupSpec"]["template"]["spec"]["containers"][1]
    assert sidecar["restartPolicy"] == "OnFailure"
    assert "--no-wait" in sidecar["args"][0] and " ray job logs " in sidecar["args"][0]
    # What a kubelet of 1.35+ reads: the container's own policy, kept by the server.
    assert head_pod["spec"]["restartPolicy"] == "Never"
    assert head_pod["spec"]["containers"][1]["name"] == SUBMITTER
    assert head_pod["spec"]["containers"][1]["restartPolicy"] == "OnFailure"
    _patch_submitter(kube, head_pod, restartCount=1, lastState=_terminated(1, _now()),
                     state={"running": {"startedAt": _now()}})  # fmt: skip
    time.sleep(REQUEUE_SECONDS)
    still = job_status(kube, namespace, name)
    assert still["jobDeploymentStatus"] == "Running", (still.get("reason"), still.get("message"))
    return kube.get(POD, head_pod["metadata"]["name"], namespace)


def test_sidecar_restart_gate_fails_only_when_restarts_are_used_up(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str, ray_head: RayHead
) -> None:
    name = "sidecar-restart"
    with ClusterHosts(kube, namespace), operator(ray_crds, namespace, GATE) as running:
        running.wait_started()  # the gate's start-up check passed on this API server
        head_pod = _restarted_once(kube, namespace, name, ray_head)
        # Failing again: between restarts the kubelet reports it waiting (back-off) with
        # the last failure recorded; two restarts are the default backoffLimit.
        _patch_submitter(kube, head_pod, restartCount=2, lastState=_terminated(1, _now()),
                         state={"waiting": {"reason": "CrashLoopBackOff"}})  # fmt: skip
        status = wait_for(
            "Failed", reaches(kube, namespace, name, "Complete", "Failed"), timeout=30
        )
    assert status["jobDeploymentStatus"] == "Failed", status
    assert status["reason"] == "SubmissionFailed"
    assert status["message"] == (
        f"Ray head pod submitter container {SUBMITTER} terminated after exceeding the "
        "maximum restart count"
    )


def test_sidecar_restart_gate_an_exit_0_after_restarts_completes_the_job(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str, ray_head: RayHead
) -> None:
    name, marker = "sidecar-restart-ok", "submitted once after a restart"
    with ClusterHosts(kube, namespace), operator(ray_crds, namespace, GATE):
        head_pod = _restarted_once(kube, namespace, name, ray_head)
        job_id = job_status(kube, namespace, name)["jobId"]
        # The restarted submitter's script: `ray job status` does not know the id, so
        # `ray job submit --no-wait` under it, then it follows the logs.
        submission = JobSubmission(entrypoint=f"echo '{marker}'", submission_id=job_id)
        answer = LOCAL_HTTP.post(
            f"{ray_head.dashboard_url}/api/jobs/", json=submission.body(), timeout=60
        )
        assert answer.status_code == 200, answer.text
        # The job ends; the RayJob waits for its submitter, which is still following.
        done = wait_for("jobStatus SUCCEEDED", _job_status_is(kube, namespace, name, "SUCCEEDED"),
                        timeout=60)  # fmt: skip
        assert done["jobDeploymentStatus"] == "Running", done
        # Its second run ends well, after as many restarts as the backoffLimit.
        _patch_submitter(kube, head_pod, restartCount=2, lastState=_terminated(1, _now()),
                         state=_terminated(0, _now()))  # fmt: skip
        status = wait_for(
            "Complete", reaches(kube, namespace, name, "Complete", "Failed"), timeout=30
        )
    assert status["jobDeploymentStatus"] == "Complete", status
    assert status["jobStatus"] == "SUCCEEDED"
    assert not status.get("reason")
