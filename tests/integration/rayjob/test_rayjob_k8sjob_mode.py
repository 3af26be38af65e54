"""K8sJobMode: the operator creates the submitter Job with KubeRay's exact command, and
that command runs for real (``tests/podrunner.py``) against the real Ray head: ``ray job
status``, ``ray job submit --no-wait`` and ``ray job logs --follow`` talk to it.

Where the submitter is not run for real, kwok completes its pod with exit code 0 at
once, as a submitter would that never reached the head.

What the shell and the kubelet do with an entrypoint is KubeRay's, not ours: the
command goes into the container's ``args`` (``/bin/bash -ce -- <command>``), so

- the kubelet first expands ``$(VAR)`` for the container's env (``RAY_JOB_SUBMISSION_ID``
  among them) and turns ``$$`` into ``$``; any other ``$`` stays;
- bash then parses the entrypoint as shell words; the runtime env is a Go-quoted
  (double-quoted) JSON string, so bash expands a ``$c`` in it too;
- ``ray job submit`` joins the words again (``subprocess.list2cmdline``: words with
  spaces are double-quoted) and Ray runs the result with ``/bin/sh -c`` on the head.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from hack.localcluster import LocalCluster
from operator_runtime.api import RayJob
from operator_runtime.clients import DashboardPool, direct_endpoint
from operator_runtime.controllers.rayjob.states import NOT_FOUND_AFTER_SUBMITTER
from operator_runtime.render import SubmitterParams, submit_command
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.kinds import JOB, POD, RAY_JOB
from tests.integration.rayjob.conftest import (
    ClusterHosts,
    operator,
    rayjob,
    reaches,
)
from tests.podrunner import RUN_FOR_REAL_LABEL, PodRunner
from tests.rayhead import RayHead
from tests.waiting import wait_for

BASH = ["/bin/bash", "-ce", "--"]
RUNTIME_ENV = 'env_vars: {GREETING: "a b $c"}'
# One Python program, each printed field naming what it shows:
# - greeting: GREETING from the runtime env, whose "$c" bash expanded (c=sea below);
# - id: "$(RAY_JOB_SUBMISSION_ID)", expanded by the kubelet before bash runs;
# - price: "\\\$5" is "\$5" after bash, and "$5" after the head's /bin/sh;
# - spaced: two spaces inside quotes, kept by every step.
ENTRYPOINT = (
    "  python -c \"import os; print('greeting=[' + os.environ['GREETING'] + ']', "
    "'id=[$(RAY_JOB_SUBMISSION_ID)]', 'price=[\\\\\\$5]', 'spaced=[two  spaces]')\"  "
)


def _submitter_template(**env: str) -> dict[str, Any]:
    """A submitter pod the test runs for real: no command, so the operator adds KubeRay's."""
    return {
        "metadata": {"labels": {RUN_FOR_REAL_LABEL: "true"}},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "ray-job-submitter",
                    "image": "rayproject/ray:2.52.1",
                    "env": [{"name": k, "value": v} for k, v in env.items()],
                }
            ],
        },
    }


def _head_logs(head: RayHead, job_id: str) -> str:
    with DashboardPool() as pool:
        return pool.dashboard(direct_endpoint(f"127.0.0.1:{head.dashboard_port}")).job_logs(job_id)


def _seconds(terminated: dict[str, str]) -> int:
    """A container's run time from its status (whole seconds, as the API keeps them)."""
    start, end = (datetime.fromisoformat(terminated[k]) for k in ("startedAt", "finishedAt"))
    return int((end - start).total_seconds())


def _submitter_pod(kube: KubeClient, namespace: str, job_name: str) -> str:
    pods = kube.list(POD, namespace, label_selector=f"job-name={job_name}")["items"]
    assert len(pods) == 1, [p["metadata"]["name"] for p in pods]
    return str(pods[0]["metadata"]["name"])


def test_submitter_runs_kuberays_command_against_the_real_head(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str, ray_head: RayHead
) -> None:
    name = "k8s-ok"
    manifest = rayjob(
        name, namespace, ray_head, submissionMode="K8sJobMode", entrypoint=ENTRYPOINT,
        runtimeEnvYAML=RUNTIME_ENV, submitterPodTemplate=_submitter_template(c="sea"),
    )  # fmt: skip
    with (
        ClusterHosts(kube, namespace),
        PodRunner(kube, namespace) as runner,
        operator(ray_crds, namespace),
    ):
        started = time.monotonic()
        kube.create(manifest)
        status = wait_for(
            "Complete", reaches(kube, namespace, name, "Complete", "Failed"), timeout=120
        )
        elapsed = time.monotonic() - started
        pod = _submitter_pod(kube, namespace, name)
        exit_code = runner.wait(pod, timeout=30)
        runner_log = runner.log(pod)
        assert not runner.errors, runner.errors
        ran = kube.get(POD, pod, namespace)["status"]["containerStatuses"][0]["state"]
    print(f"\nK8sJobMode: RayJob created -> Complete in {elapsed:.1f} s; the submitter's "
          f"command ran {_seconds(ran['terminated'])} s of it")  # fmt: skip
    assert status["jobDeploymentStatus"] == "Complete", (status, runner_log)
    assert status["jobStatus"] == "SUCCEEDED"
    assert status["succeeded"] == 1 and status["failed"] == 0
    job_id, url = status["jobId"], status["dashboardURL"]
    assert url.endswith(f".svc.cluster.local:{ray_head.dashboard_port}")

    assert status["message"] == "Job finished successfully."  # the head's, copied

    # The submitter Job: KubeRay's object, with exactly its command for this RayJob.
    job = kube.get(JOB, name, namespace)
    raw = kube.get(RAY_JOB, name, namespace)
    labels = {
        "ray.io/originated-from-cr-name": name,
        "ray.io/originated-from-crd": "RayJob",
        "app.kubernetes.io/created-by": "kuberay-operator",
    }
    assert job["metadata"]["labels"] == labels
    pod_labels = job["spec"]["template"]["metadata"]["labels"]  # the Job controller adds more
    assert {**labels, RUN_FOR_REAL_LABEL: "true"}.items() <= pod_labels.items()
    assert job["spec"]["backoffLimit"] == 2
    [owner] = job["metadata"]["ownerReferences"]
    assert owner["kind"] == "RayJob" and owner["controller"] is True
    assert owner["uid"] == raw["metadata"]["uid"]
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["env"] == [
        {"name": "c", "value": "sea"},
        {"name": "PYTHONUNBUFFERED", "value": "1"},
        {"name": "RAY_DASHBOARD_ADDRESS", "value": url},
        {"name": "RAY_JOB_SUBMISSION_ID", "value": job_id},
    ]
    live = RayJob.model_validate(raw)
    expected = submit_command(SubmitterParams(job=live, job_id=job_id, dashboard_url=url))
    assert container["command"] == BASH
    assert container["args"] == [expected]
    command = container["args"][0]
    address = f"http://{url}"
    assert f"if ! ray job status --address {address} {job_id} >/dev/null 2>&1 ; then" in command
    assert f"ray job submit --address {address} --no-wait " in command
    assert ' --runtime-env-json "{\\"env_vars\\":{\\"GREETING\\":\\"a b $c\\"}}" ' in command
    assert f" --submission-id {job_id} -- {ENTRYPOINT.strip()} ; fi ; " in command
    assert command.endswith(f"; fi ; ray job logs --address {address} --follow {job_id}")

    # Complete only once the submitter had finished, not when the Ray job had.
    conditions = job["status"]["conditions"]
    done = next(c for c in conditions if c["type"] == "Complete" and c["status"] == "True")
    assert status["endTime"] >= done["lastTransitionTime"], (status, conditions)

    # ... and it ran: submitted once, followed the logs to the end, exited 0.
    line = f"greeting=[a b sea] id=[{job_id}] price=[$5] spaced=[two  spaces]"
    assert exit_code == 0, runner_log
    assert line in _head_logs(ray_head, job_id)
    assert line in runner_log
    assert "Job submission server address" in runner_log  # ray job submit spoke
    assert f"Job '{job_id}' submitted successfully" in runner_log


def test_submitter_completed_without_a_ray_job_fails_the_rayjob(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str, ray_head: RayHead
) -> None:
    """kwok completes the submitter pod at once and nothing reaches the head: the Job is
    Complete, the head answers 404 for the id, and KubeRay fails the RayJob."""
    name = "k8s-nojob"
    with ClusterHosts(kube, namespace), operator(ray_crds, namespace):
        kube.create(rayjob(name, namespace, ray_head))  # K8sJobMode by default
        status = wait_for(
            "Failed", reaches(kube, namespace, name, "Complete", "Failed"), timeout=120
        )
        conditions = kube.get(JOB, name, namespace)["status"]["conditions"]
    assert {c["type"] for c in conditions if c["status"] == "True"} >= {"Complete"}
    assert status["jobDeploymentStatus"] == "Failed", status
    # The path KubeRay takes when it reads the Job within 30 s of its end (it is read
    # every 3 s); later than that it would fail with
    # JobDeploymentStatusTransitionGracePeriodExceeded and jobStatus FAILED instead.
    assert status["reason"] == "AppFailed"
    assert status["message"] == NOT_FOUND_AFTER_SUBMITTER
    assert not status.get("jobStatus")  # no Ray job was ever seen
    assert status["failed"] == 1 and status["succeeded"] == 0


def test_failing_entrypoint_run_by_the_submitter_fails_the_rayjob(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str, ray_head: RayHead
) -> None:
    name = "k8s-exit3"
    manifest = rayjob(
        name, namespace, ray_head, submissionMode="K8sJobMode",
        entrypoint="python -c \"import sys; print('about to exit 3'); sys.exit(3)\"",
        submitterPodTemplate=_submitter_template(),
    )  # fmt: skip
    with (
        ClusterHosts(kube, namespace),
        PodRunner(kube, namespace) as runner,
        operator(ray_crds, namespace),
    ):
        kube.create(manifest)
        status = wait_for(
            "Failed", reaches(kube, namespace, name, "Complete", "Failed"), timeout=120
        )
        pod = _submitter_pod(kube, namespace, name)
        exit_code = runner.wait(pod, timeout=30)
        runner_log = runner.log(pod)
    assert status["jobDeploymentStatus"] == "Failed", (status, runner_log)
    assert status["reason"] == "AppFailed"
    assert status["jobStatus"] == "FAILED"
    assert "exit code 3" in status["message"]
    assert status["failed"] == 1
    # `ray job logs --follow` ends with the job and exits 0 even for a failed job: the
    # submitter Job completes, and the failure comes from the head's job info.
    assert exit_code == 0, runner_log
    assert "about to exit 3" in runner_log
    assert "about to exit 3" in _head_logs(ray_head, status["jobId"])


def test_submitter_job_that_fails_fails_the_submission(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str, ray_head: RayHead
) -> None:
    """A submitter that never reaches the head (here its own command exits 2) uses up
    its Job's backoff limit: the Job controller fails the Job, and KubeRay names its
    condition in the RayJob's message."""
    name = "k8s-subfail"
    template = _submitter_template()
    template["spec"]["containers"][0]["command"] = ["sh", "-c", "echo cannot submit; exit 2"]
    manifest = rayjob(
        name, namespace, ray_head, submissionMode="K8sJobMode", submitterPodTemplate=template,
        submitterConfig={"backoffLimit": 0},
    )  # fmt: skip
    with (
        ClusterHosts(kube, namespace),
        PodRunner(kube, namespace) as runner,
        operator(ray_crds, namespace),
    ):
        kube.create(manifest)
        status = wait_for(
            "Failed", reaches(kube, namespace, name, "Complete", "Failed"), timeout=120
        )
        pod = _submitter_pod(kube, namespace, name)
        exit_code = runner.wait(pod, timeout=30)
        job = kube.get(JOB, name, namespace)
    assert exit_code == 2 and "cannot submit" in runner.log(pod)
    # The user's command is kept (KubeRay adds its own only to a container without one).
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["sh", "-c", "echo cannot submit; exit 2"]
    assert "args" not in container
    assert job["spec"]["backoffLimit"] == 0
    failed = next(c for c in job["status"]["conditions"] if c["type"] == "Failed")
    assert failed["status"] == "True" and failed["reason"] == "BackoffLimitExceeded"
    assert status["jobDeploymentStatus"] == "Failed", status
    assert status["reason"] == "SubmissionFailed"
    assert status["message"] == (
        f"Job submission has failed. Reason: {failed['reason']}. Message: {failed['message']}"
    )
    assert status["failed"] == 1
