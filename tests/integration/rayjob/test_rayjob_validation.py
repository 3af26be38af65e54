"""A RayJob's validation on the real control plane: the rules the CRD carries (CEL and
schema bounds) are refused by the API server itself; the rest are the controller's,
which parks the RayJob in ValidationFailed with the field path in its status and in a
Warning event. A fixed spec leaves ValidationFailed (ours; KubeRay keeps it there)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from hack.localcluster import LocalCluster
from hack.rayhead import RayHead
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.errors import Invalid
from operator_runtime.runtime.kinds import RAY_CLUSTER, RAY_JOB, Object
from tests.integration.raycluster.conftest import events, raycluster
from tests.integration.rayjob.conftest import (
    ClusterHosts,
    job_status,
    operator,
    rayjob,
    reaches,
)
from tests.waiting import wait_for


def plain_job(name: str, namespace: str, **spec: Any) -> Object:
    """A RayJob no test lets run: its cluster needs no Ray head."""
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "entrypoint": "python -c \"print('never')\"",
            "rayClusterSpec": raycluster("unused", namespace, workers=0)["spec"],
            **spec,
        },
    }


def rule(policy: str, **condition: Any) -> dict[str, Any]:
    return {"policy": policy, "condition": condition}


# name -> (spec fields, words of the API server's answer)
REFUSED_BY_THE_API_SERVER = {
    "legacy-and-rules": (
        {"deletionStrategy": {"onSuccess": {"policy": "DeleteCluster"},
                              "onFailure": {"policy": "DeleteNone"},
                              "deletionRules": [rule("DeleteCluster", jobStatus="FAILED")]}},
        "legacy policies (onSuccess/onFailure) and deletionRules cannot be used together",
    ),
    "legacy-incomplete": (
        {"deletionStrategy": {"onSuccess": {"policy": "DeleteCluster"}}},
        "deletionStrategy requires either BOTH onSuccess and onFailure",
    ),
    "empty-strategy": (
        {"deletionStrategy": {}},
        "deletionStrategy requires either BOTH onSuccess and onFailure",
    ),
    "two-conditions": (
        {"deletionStrategy": {"deletionRules": [
            rule("DeleteCluster", jobStatus="FAILED", jobDeploymentStatus="Failed")]}},
        "JobStatus and JobDeploymentStatus cannot be used together",
    ),
    "no-condition": (
        {"deletionStrategy": {"deletionRules": [rule("DeleteCluster", ttlSeconds=3)]}},
        "the deletion condition requires either the JobStatus or the JobDeploymentStatus",
    ),
    "negative-rule-ttl": (
        {"deletionStrategy": {"deletionRules": [
            rule("DeleteCluster", jobStatus="FAILED", ttlSeconds=-1)]}},
        "ttlSeconds: Invalid value: -1: spec.deletionStrategy.deletionRules[0].condition"
        ".ttlSeconds in body should be greater than or equal to 0",
    ),
    "zero-pre-running-deadline": (
        {"preRunningDeadlineSeconds": 0},
        "spec.preRunningDeadlineSeconds in body should be greater than or equal to 1",
    ),
    "unknown-manager": (
        {"managedBy": "someone-else"},
        "the managedBy field value must be either 'ray.io/kuberay-operator' or "
        "'kueue.x-k8s.io/multikueue'",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(REFUSED_BY_THE_API_SERVER))
def test_the_api_server_refuses_what_the_crd_forbids(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str, case: str
) -> None:
    spec, words = REFUSED_BY_THE_API_SERVER[case]
    with pytest.raises(Invalid) as refused:
        kube.create(plain_job(case, namespace, **spec))
    assert words in refused.value.message, refused.value.message


def test_the_api_server_keeps_managed_by_as_it_was_created(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str
) -> None:
    created = kube.create(plain_job("managed", namespace, managedBy="ray.io/kuberay-operator"))
    created["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    with pytest.raises(Invalid) as refused:
        kube.update(created)
    assert "the managedBy field is immutable" in refused.value.message


# name -> (spec fields, field path, event reason)
REFUSED_BY_THE_CONTROLLER = {
    "suspend": ({"suspend": True}, "spec.suspend", "InvalidRayJobSpec"),
    "selector-backoff": (
        {"rayClusterSpec": None, "clusterSelector": {"ray.io/cluster": "shared"},
         "backoffLimit": 1},
        "spec.backoffLimit", "InvalidRayJobSpec",
    ),
    "interactive-backoff": (
        {"submissionMode": "InteractiveMode", "backoffLimit": 1},
        "spec.backoffLimit", "InvalidRayJobSpec",
    ),
    "n" * 48: ({}, "metadata.name", "InvalidRayJobMetadata"),
}  # fmt: skip


def test_the_controller_parks_an_invalid_rayjob_in_validation_failed(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str
) -> None:
    with operator(ray_crds, namespace) as running:
        for name, (spec, _, _) in REFUSED_BY_THE_CONTROLLER.items():
            manifest = plain_job(name, namespace, **spec)
            manifest["spec"] = {k: v for k, v in manifest["spec"].items() if v is not None}
            kube.create(manifest)
        parked = {
            name: wait_for(name, reaches(kube, namespace, name, "ValidationFailed"), timeout=30)
            for name in REFUSED_BY_THE_CONTROLLER
        }
        warned = {
            name: wait_for(
                f"{reason} for {name}",
                lambda name=name, reason=reason: events(kube, namespace, reason, name),
            )
            for name, (_, _, reason) in REFUSED_BY_THE_CONTROLLER.items()
        }
        time.sleep(2)  # a RayJob in ValidationFailed must not move on
        after = {name: job_status(kube, namespace, name) for name in REFUSED_BY_THE_CONTROLLER}
        clusters = kube.list(RAY_CLUSTER, namespace)["items"]
        log = running.log()
    for name, (_, path, _) in REFUSED_BY_THE_CONTROLLER.items():
        status = parked[name]
        assert status["reason"] == "ValidationFailed", status
        assert path in status["message"], status
        assert [e["type"] for e in warned[name]] == ["Warning"], warned[name]
        assert path in warned[name][0]["note"], warned[name]
        assert after[name] == status, f"{name} moved on from ValidationFailed"
    assert clusters == [], "an invalid RayJob got a cluster"
    assert "Traceback" not in log


def test_a_fixed_rayjob_leaves_validation_failed_and_completes(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str, ray_head: RayHead
) -> None:
    name = "fixed"
    manifest = rayjob(name, namespace, ray_head, submissionMode="HTTPMode", suspend=True)
    with ClusterHosts(kube, namespace), operator(ray_crds, namespace):
        kube.create(manifest)
        parked = wait_for("ValidationFailed", reaches(kube, namespace, name, "ValidationFailed"))
        kube.patch(RAY_JOB, name, namespace, {"spec": {"suspend": False}})
        started = time.monotonic()
        status = wait_for(
            "Complete", reaches(kube, namespace, name, "Complete", "Failed"), timeout=90
        )
        elapsed = time.monotonic() - started
    print(f"\nfixed RayJob: spec patched -> Complete in {elapsed:.1f} s")
    assert "spec.suspend" in parked["message"]
    assert status["jobDeploymentStatus"] == "Complete", status
    assert status["jobStatus"] == "SUCCEEDED"
    assert "reason" not in status, status
    assert status["succeeded"] == 1 and status["failed"] == 0
