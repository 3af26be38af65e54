"""The pod runner (``tests/podrunner.py``) on the real control plane: kwok leaves pods
labelled to run for real Running, the runner runs their command, and the Job controller
of kube-controller-manager counts the real exit code (Complete, Failed, backoffLimit).
Pods without the label still behave as before: kwok completes a Job's pods itself."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hack.localcluster import LocalCluster
from tests.podrunner import RUN_FOR_REAL_LABEL, PodRunner
from tests.waiting import wait_for

GREETING = "a b $c 'd'"
"""Spaces, a dollar sign and quotes: must reach the process as written."""


@pytest.fixture
def runner(local_cluster: LocalCluster, namespace: str, tmp_path: Path) -> Iterator[PodRunner]:
    with PodRunner(local_cluster.kubeconfig, namespace, log_dir=tmp_path) as pod_runner:
        yield pod_runner
    assert not pod_runner.errors, pod_runner.errors


def _job(name: str, script: str, *, for_real: bool = True, backoff_limit: int = 0) -> Any:
    labels = {RUN_FOR_REAL_LABEL: "true"} if for_real else {}
    container = {
        "name": "main",
        "image": "bash",
        "command": ["bash", "-ce", "--", script],
        "env": [{"name": "GREETING", "value": GREETING}],
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "backoffLimit": backoff_limit,
            "template": {
                "metadata": {"labels": labels},
                "spec": {"restartPolicy": "Never", "containers": [container]},
            },
        },
    }


def _create(cluster: LocalCluster, namespace: str, manifest: Any) -> float:
    cluster.kubectl("-n", namespace, "create", "-f", "-", input=json.dumps(manifest))
    return time.monotonic()


def _eventually(check: Callable[[], Any], what: str, timeout: float = 90) -> Any:
    """``wait_for`` with this module's bound: a Job's pod runs a real process."""
    return wait_for(what, check, timeout)


def _condition(cluster: LocalCluster, namespace: str, job: str) -> str | None:
    """The Job's terminal condition (Complete or Failed) once it is True."""
    status = cluster.get_json("-n", namespace, "job", job).get("status", {})
    for condition in status.get("conditions", []):
        if condition["type"] in ("Complete", "Failed") and condition["status"] == "True":
            return str(condition["type"])
    return None


def _pods(cluster: LocalCluster, namespace: str, job: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = cluster.get_json(
        "-n", namespace, "pods", "-l", f"job-name={job}"
    )["items"]
    return items


def test_a_failing_command_fails_its_pod_with_the_real_exit_code_and_the_job(
    local_cluster: LocalCluster, namespace: str, runner: PodRunner
) -> None:
    _create(local_cluster, namespace, _job("greet", 'echo "$GREETING"; exit 3'))
    [pod] = _eventually(lambda: _pods(local_cluster, namespace, "greet"), "the Job's pod")
    name = pod["metadata"]["name"]
    assert runner.wait(name) == 3
    assert runner.log(name) == GREETING + "\n"
    assert _eventually(lambda: _condition(local_cluster, namespace, "greet"), "Job") == "Failed"

    time.sleep(2)  # kwok had its chance to overwrite the status; it must not have
    status = local_cluster.get_json("-n", namespace, "pod", name)["status"]
    assert status["phase"] == "Failed"
    [container] = status["containerStatuses"]
    terminated = container["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (3, "Error")
    assert terminated["startedAt"] <= terminated["finishedAt"]
    assert status["podIP"].startswith("10.244."), "the pod ran on a kwok node with an IP"
    job = local_cluster.get_json("-n", namespace, "job", "greet")["status"]
    assert (job.get("failed"), job.get("succeeded")) == (1, None)


def test_a_command_that_exits_0_completes_the_job(
    local_cluster: LocalCluster, namespace: str, runner: PodRunner
) -> None:
    created = _create(local_cluster, namespace, _job("ok", 'test "$GREETING" = "a b \\$c '
                                                     "'d'\"; echo done"))  # fmt: skip
    assert _eventually(lambda: _condition(local_cluster, namespace, "ok"), "Job") == "Complete"
    took = time.monotonic() - created
    [pod] = _pods(local_cluster, namespace, "ok")
    name = pod["metadata"]["name"]
    assert runner.exits == {name: 0}
    assert runner.log(name) == "done\n"
    terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (pod["status"]["phase"], terminated["exitCode"]) == ("Succeeded", 0)
    print(f"podrunner Job created -> Complete in {took:.2f}s")


def test_backoff_limit_counts_real_failures(
    local_cluster: LocalCluster, namespace: str, runner: PodRunner
) -> None:
    _create(local_cluster, namespace, _job("retry", "exit 5", backoff_limit=1))
    outcome = _eventually(lambda: _condition(local_cluster, namespace, "retry"), "Job", timeout=120)
    assert outcome == "Failed"
    pods = _pods(local_cluster, namespace, "retry")
    assert len(pods) == 2, "backoffLimit 1: one retry"
    assert runner.exits == {pod["metadata"]["name"]: 5 for pod in pods}


def test_kwok_completes_unlabelled_job_pods_and_leaves_labelled_ones_running(
    local_cluster: LocalCluster, namespace: str
) -> None:
    # No runner here: what kwok alone does with each kind of pod.
    _create(local_cluster, namespace, _job("plain", "exit 3", for_real=False))
    _create(local_cluster, namespace, _job("held", "exit 3"))
    assert _eventually(lambda: _condition(local_cluster, namespace, "plain"), "Job") == "Complete"
    [plain] = _pods(local_cluster, namespace, "plain")
    terminated = plain["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (plain["status"]["phase"], terminated["exitCode"]) == ("Succeeded", 0)

    def running_and_ready() -> dict[str, Any] | None:
        pods = _pods(local_cluster, namespace, "held")
        ready = [c for c in pods[0]["status"].get("conditions", []) if c["type"] == "Ready"]
        if ready and ready[0]["status"] == "True":
            return pods[0]
        return None

    held = _eventually(running_and_ready, "the labelled pod Ready")
    assert held["status"]["podIP"].startswith("10.244.")
    time.sleep(3)
    [held] = _pods(local_cluster, namespace, "held")
    assert held["status"]["phase"] == "Running"
    assert "running" in held["status"]["containerStatuses"][0]["state"]
    assert _condition(local_cluster, namespace, "held") is None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_deleting_the_pod_or_stopping_the_runner_kills_the_process(
    local_cluster: LocalCluster, namespace: str, tmp_path: Path
) -> None:
    with PodRunner(local_cluster.kubeconfig, namespace, log_dir=tmp_path) as runner:
        pids = {}
        for job in ("deleted", "outlived"):
            # "$$$$": the kubelet's $(VAR) expansion makes each "$$" one "$" (as here).
            _create(local_cluster, namespace, _job(job, "echo $$$$; exec sleep 600"))
            [pod] = _eventually(lambda job=job: _pods(local_cluster, namespace, job), job)
            log = _eventually(lambda pod=pod: runner.log(pod["metadata"]["name"]), "its pid")
            pids[job] = int(log.split()[0])
        assert all(_alive(pid) for pid in pids.values())

        local_cluster.kubectl("-n", namespace, "delete", "job", "deleted",
                              "--cascade=background", "--wait=false")  # fmt: skip
        _eventually(lambda: not _alive(pids["deleted"]), "the deleted pod's process to die")
        assert _alive(pids["outlived"])
    assert not _alive(pids["outlived"]), "the runner stopped but left its process running"
    assert runner.exits == {}, "killed processes are not exits"
