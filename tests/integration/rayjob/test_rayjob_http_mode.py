"""HTTPMode: the operator submits the entrypoint to the real Ray head itself, through
the dashboard's Jobs API, by service name and through the API server's proxy."""

from __future__ import annotations

import json
import time

import pytest

from hack.localcluster import LocalCluster
from hack.rayhead import RayHead
from operator_runtime.clients import DashboardPool, direct_endpoint
from operator_runtime.runtime.client import KubeClient
from tests.integration.rayjob.conftest import (
    ClusterHosts,
    operator,
    rayjob,
    reaches,
)
from tests.waiting import wait_for

ADDRESSING = {"direct": (), "kubernetes-proxy": ("--use-kubernetes-proxy",)}


def _logs(head: RayHead, job_id: str) -> str:
    with DashboardPool() as pool:
        return pool.dashboard(direct_endpoint(f"127.0.0.1:{head.dashboard_port}")).job_logs(job_id)


@pytest.mark.parametrize("addressing", sorted(ADDRESSING))
def test_entrypoint_runs_on_the_real_head_and_completes(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str, ray_head: RayHead, addressing: str
) -> None:
    marker = f"hello from {addressing}"
    manifest = rayjob(
        "http-ok", namespace, ray_head, submissionMode="HTTPMode",
        entrypoint=f"python -c \"print('{marker}')\"",
    )  # fmt: skip
    with ClusterHosts(kube, namespace), operator(ray_crds, namespace, *ADDRESSING[addressing]):
        started = time.monotonic()
        kube.create(manifest)
        status = wait_for(
            "Complete", reaches(kube, namespace, "http-ok", "Complete", "Failed"), timeout=120
        )
        elapsed = time.monotonic() - started
    print(f"\nHTTPMode ({addressing}): RayJob created -> Complete in {elapsed:.1f} s")
    if status["jobDeploymentStatus"] != "Complete":  # what Ray said, whole, for the report
        print(json.dumps(status, indent=1), _logs(ray_head, str(status.get("jobId"))), sep="\n")
    assert status["jobDeploymentStatus"] == "Complete", status
    assert status["jobStatus"] == "SUCCEEDED"
    assert status["succeeded"] == 1 and status["failed"] == 0
    assert status["dashboardURL"].endswith(f".svc.cluster.local:{ray_head.dashboard_port}")
    assert status["rayJobInfo"]["endTime"] >= status["rayJobInfo"]["startTime"]
    assert marker in _logs(ray_head, status["jobId"])


def test_failing_entrypoint_fails_the_rayjob(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str, ray_head: RayHead
) -> None:
    manifest = rayjob(
        "http-exit3", namespace, ray_head, submissionMode="HTTPMode",
        entrypoint="python -c \"import sys; sys.exit(3)\"",
    )  # fmt: skip
    with ClusterHosts(kube, namespace), operator(ray_crds, namespace):
        kube.create(manifest)
        status = wait_for(
            "Failed", reaches(kube, namespace, "http-exit3", "Complete", "Failed"), timeout=120
        )
    assert status["jobDeploymentStatus"] == "Failed", status
    assert status["reason"] == "AppFailed"
    assert status["jobStatus"] == "FAILED"
    assert status["failed"] == 1
