"""A Redis cleanup Job that admission refuses never holds a deletion past the GCS FT
deletion timeout, and the operator's configuration sizes the Job so that it is admitted
(KubeRay #4721: GKE Autopilot refuses KubeRay's fixed 200m CPU, and KubeRay then
requeues for ever with the finalizer on).

Autopilot's admission is played by a ValidatingAdmissionPolicy bound to the test's
namespace, which refuses batch Jobs whose containers request less than 250m CPU.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hack.localcluster import LocalCluster
from operator_runtime.api.finalizers import Finalizer
from operator_runtime.controllers.raycluster.options import SHORT_REQUEUE_SECONDS
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.errors import Forbidden, NotFound
from operator_runtime.runtime.kinds import JOB, RAY_CLUSTER
from tests.integration.raycluster.conftest import (
    events,
    get_cluster,
    live_pods,
    raycluster,
    recorded,
    running_operator,
)
from tests.integration.raycluster.watches import event_log
from tests.operatorprocess import OperatorProcess
from tests.waiting import wait_for

FINALIZER = Finalizer.GCS_FT_REDIS_CLEANUP.value
FT = {"gcsFaultToleranceOptions": {"redisAddress": "redis.example:6379"}}
MINIMUM_CPU = "250m"
DEADLINE_SECONDS = 20
RELEASE_MARGIN_SECONDS = 10.0
"""After the deadline the operator's next pass is already queued for that moment (it
requeues at ``min(2 s, time left)``); this covers the queue and one pass on a loaded
machine."""


def _policy(namespace: str) -> list[dict[str, Any]]:
    name = f"min-cpu-{namespace}"
    every_container_enough_cpu = (
        "object.spec.template.spec.containers.all(c, has(c.resources)"
        " && has(c.resources.requests) && 'cpu' in c.resources.requests"
        f" && !quantity(c.resources.requests.cpu).isLessThan(quantity('{MINIMUM_CPU}')))"
    )
    return [
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {
                    "resourceRules": [
                        {
                            "apiGroups": ["batch"],
                            "apiVersions": ["v1"],
                            "operations": ["CREATE"],
                            "resources": ["jobs"],
                        }
                    ]
                },
                "validations": [
                    {
                        "expression": every_container_enough_cpu,
                        "message": f"every container must request at least {MINIMUM_CPU} CPU",
                        "reason": "Forbidden",
                    }
                ],
            },
        },
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {
                "policyName": name,
                "validationActions": ["Deny"],
                "matchResources": {
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
                },
            },
        },
    ]


def _probe_job(namespace: str, cpu: str) -> dict[str, Any]:
    container = {
        "name": "probe",
        "image": "busybox",
        "resources": {"requests": {"cpu": cpu}, "limits": {"cpu": cpu}},
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "admission-probe", "namespace": namespace},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [container]}}},
    }


def _refused(client: KubeClient, namespace: str, cpu: str) -> bool:
    try:
        client.create(_probe_job(namespace, cpu), dry_run=True)
    except Forbidden:
        return True
    return False


@pytest.fixture
def autopilot_like(ray_crds: LocalCluster, client: KubeClient, namespace: str) -> Iterator[None]:
    """The policy in force in the namespace: a dry-run Job asking 200m is refused (the
    API server loads policies asynchronously), one asking the minimum is not."""
    objects = _policy(namespace)
    ray_crds.kubectl(
        "apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects})
    )
    try:
        wait_for("the admission policy in force", lambda: _refused(client, namespace, "200m"))
        assert not _refused(client, namespace, MINIMUM_CPU)
        yield
    finally:
        for obj in objects:
            ray_crds.kubectl("delete", obj["kind"], obj["metadata"]["name"], check=False)


def _gone(client: KubeClient, namespace: str, name: str) -> bool:
    try:
        get_cluster(client, namespace, name)
    except NotFound:
        return True
    return False


def _ft_cluster(client: KubeClient, namespace: str, name: str, timeout: int | None) -> None:
    annotations = {"ray.io/gcs-ft-deletion-timeout": str(timeout)} if timeout else None
    client.create(raycluster(name, namespace, workers=0, annotations=annotations, **FT))
    wait_for(
        "finalizer",
        lambda: (
            FINALIZER in (get_cluster(client, namespace, name)["metadata"].get("finalizers") or ())
        ),
    )
    wait_for("head pod", lambda: live_pods(client, namespace, name, "head"))


def test_a_refused_cleanup_job_releases_the_cluster_at_the_deadline_without_a_hot_loop(
    ray_crds: LocalCluster, client: KubeClient, namespace: str, autopilot_like: None
) -> None:
    with running_operator(ray_crds, namespace) as operator:  # KubeRay's 200m / 256Mi
        _ft_cluster(client, namespace, "refused", DEADLINE_SECONDS)

        def refused_creates() -> float:
            sample = operator.sample(
                "rest_client_requests_total", {"verb": "create", "code": "403"}
            )
            return sample or 0.0

        before = refused_creates()
        client.delete(RAY_CLUSTER, "refused", namespace)
        started = time.monotonic()
        warning = wait_for(
            "FailedToCreateRedisCleanupJob",
            lambda: events(client, namespace, "FailedToCreateRedisCleanupJob", "refused"),
            timeout=DEADLINE_SECONDS,
        )
        assert warning[0]["type"] == "Warning"
        assert MINIMUM_CPU in warning[0]["note"], warning[0]["note"]
        assert not _gone(client, namespace, "refused"), "released before the deadline"
        wait_for(
            "the cluster released by the deadline",
            lambda: _gone(client, namespace, "refused"),
            timeout=DEADLINE_SECONDS + 60,
            interval=0.2,
        )
        elapsed = time.monotonic() - started
        attempts = refused_creates() - before
    # deletionTimestamp has whole seconds: the deadline may come up to 1 s early.
    assert DEADLINE_SECONDS - 1 <= elapsed <= DEADLINE_SECONDS + RELEASE_MARGIN_SECONDS, elapsed
    forced = events(client, namespace, "ForceDeletedStuckCluster", "refused")
    assert forced and forced[0]["type"] == "Warning", forced
    # Retried, but no faster than the requeue interval (a hot loop would make hundreds).
    most = math.ceil(DEADLINE_SECONDS / SHORT_REQUEUE_SECONDS) + 2
    assert 2 <= attempts <= most, f"{attempts} refused creates in {elapsed:.1f}s"
    assert client.list(JOB, namespace)["items"] == []


def _config_file(path: Path, namespace: str, resources: dict[str, Any]) -> Path:
    # With --config the file decides these settings, whatever the flags say.
    config = {
        "apiVersion": "config.ray.io/v1alpha1",
        "kind": "Configuration",
        "metricsAddr": "0",
        "probeAddr": "0",
        "enableLeaderElection": False,
        "watchNamespace": namespace,
        "reconcileConcurrency": 2,
        "redisCleanupJobResources": resources,
    }
    path.write_text(json.dumps(config))  # JSON is YAML
    return path


def test_the_configured_size_is_admitted_and_the_cleanup_job_carries_exactly_it(
    ray_crds: LocalCluster,
    client: KubeClient,
    namespace: str,
    autopilot_like: None,
    tmp_path: Path,
) -> None:
    resources = {
        "requests": {"cpu": "500m", "memory": "512Mi"},
        "limits": {"cpu": "500m", "memory": "512Mi"},
    }
    config = _config_file(tmp_path / "config.yaml", namespace, resources)
    selector = "ray.io/cluster=sized,ray.io/node-type=redis-cleanup"
    with OperatorProcess(ray_crds.kubeconfig, namespace, f"--config={config}"):
        _ft_cluster(client, namespace, "sized", timeout=None)  # KubeRay's 300 s
        with event_log(client, JOB, namespace, selector) as jobs:
            client.delete(RAY_CLUSTER, "sized", namespace)
            # Far inside the 300 s deadline: the Job ran, the deadline played no part.
            wait_for("cluster deleted", lambda: _gone(client, namespace, "sized"), timeout=120)
            added = [obj for kind, _, obj in jobs.entries if kind == "ADDED"]
    assert len(added) == 1, [
        (
            o["metadata"]["uid"],
            o["metadata"]["resourceVersion"],
            o["metadata"].get("deletionTimestamp"),
        )
        for o in added
    ]
    containers = added[0]["spec"]["template"]["spec"]["containers"]
    assert [c["resources"] for c in containers] == [resources]
    recorded(client, namespace, "CreatedRedisCleanupJob", "sized")
    assert not events(client, namespace, "FailedToCreateRedisCleanupJob", "sized")
    assert not events(client, namespace, "ForceDeletedStuckCluster", "sized")
