"""GCS fault tolerance with a real Redis, on the real node, under both operators.

Redis is a pod (the stand-in ``make redis-image`` builds from Debian's redis-server,
``hack/image/redis``) behind a Service, its ``--requirepass`` from a Secret that the
RayCluster's ``gcsFaultToleranceOptions.redisPassword`` also reads; the password is made
here and never printed. The Redis container has it as ``REDISCLI_AUTH`` too, so
``redis-cli`` in it authenticates without the password on any command line.

- A head (no CPUs, so actors land on the worker) and one worker: a detached actor
  counts; the head pod is deleted; a new head comes up from Redis, the worker pod is
  the same pod and its container never restarted (its raylet waits out the GCS's
  absence: ``RAY_gcs_rpc_server_reconnect_timeout_s``), and the actor answers with its
  count intact. Then the RayCluster is deleted: the operator's Redis cleanup Job runs,
  the cluster's keys (``RAY<storage namespace>@*``) are gone, and with them the
  finalizer and the RayCluster.
- Redis gone before the RayCluster is deleted: the head's GCS no longer stops on SIGTERM
  (the kubelet kills it at the 30 s grace period), the cleanup Job then cannot finish (it
  retries the connection for a minute), and the deletion ends at
  ``ray.io/gcs-ft-deletion-timeout`` with a ``ForceDeletedStuckCluster`` Warning.

Both operators pass every step alike; each test prints its figures (benchmarks/README.md,
"GCS fault tolerance on the real node").
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from hack.image.redis import REDIS_IMAGE
from hack.localcluster import LocalCluster
from operator_runtime.runtime.kinds import JOB, POD, RAY_CLUSTER
from tests.kubeclient import shared_client
from tests.node.harness import (
    RAY_PODS_GONE_SECONDS,
    all_ready,
    cluster_spec,
    gone,
    operators,
    pod_states,
    pods,
    server_side_apply,
)
from tests.node.headloss import RECOVERY_SECONDS, count_twice, lose_the_head
from tests.waiting import wait_for
from tests.watching import Event, Recorder

OPERATORS = operators(compared_in_make_test=False)
"""KubeRay's side of these scenarios runs under ``make node-compare``."""

RAY_READY_SECONDS = 420.0
"""As in test_ray_on_the_node.py: Ray pods on two loaded cores."""
DELETION_SECONDS = 300.0
"""From the RayCluster's delete to its end: the pods stop, the cleanup Job's pod starts
and imports Ray, and the operator sees the Job finish."""
pytestmark = pytest.mark.timeout(
    2 * RAY_READY_SECONDS + RECOVERY_SECONDS + DELETION_SECONDS + RAY_PODS_GONE_SECONDS
)
"""A scenario's own bounds in a row (a cluster, Redis, a recovery, a deletion), and the
namespace's clean-up after it, which pytest-timeout counts too."""
DELETION_TIMEOUT = 60
"""``ray.io/gcs-ft-deletion-timeout`` of the unreachable-Redis scenario. Longer than the
head takes to go (its GCS, cut off from Redis, ignores SIGTERM: the kubelet kills it at
the 30 s grace period, and neither operator starts the Job before), shorter than the
cleanup Job's own attempts (Ray retries the connection 120 times, 500 ms apart)."""
FINALIZER = "ray.io/gcs-ft-redis-cleanup-finalizer"

FROM_SECRET = {"secretKeyRef": {"name": "redis-password", "key": "password"}}


@pytest.fixture(scope="module")
def redis_service(real_cluster: LocalCluster, ray_namespace: str) -> str:
    """The Service ``redis`` and the Secret ``redis-password`` (a password made here),
    for the module: the Service keeps its ClusterIP while Redis pods come and go, so no
    Ray head resolves a name CoreDNS still caches for a Service since deleted."""
    server_side_apply(real_cluster, ray_namespace, {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "redis-password"},
        "stringData": {"password": secrets.token_urlsafe(24)},
    })  # fmt: skip
    server_side_apply(real_cluster, ray_namespace, {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "redis"},
        "spec": {"selector": {"app": "redis"}, "ports": [{"port": 6379, "targetPort": 6379}]},
    })  # fmt: skip
    return "redis"


@pytest.fixture
def redis(real_cluster: LocalCluster, ray_namespace: str, redis_service: str) -> Iterator[str]:
    """Redis as a pod behind ``redis_service``, ``--requirepass`` from the Secret; the
    pod's name. Deleted after, if the test has not."""
    ns = ray_namespace
    server_side_apply(real_cluster, ns, {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "redis", "labels": {"app": "redis"}},
        "spec": {"containers": [{
            "name": "redis", "image": REDIS_IMAGE, "imagePullPolicy": "IfNotPresent",
            "command": ["redis-server"],
            "args": ["--bind", "0.0.0.0", "--requirepass", "$(REDIS_PASSWORD)",
                     "--save", "", "--appendonly", "no"],
            "env": [{"name": "REDIS_PASSWORD", "valueFrom": FROM_SECRET},
                    {"name": "REDISCLI_AUTH", "valueFrom": FROM_SECRET}],
            "ports": [{"name": "redis", "containerPort": 6379}],
            "readinessProbe": {"tcpSocket": {"port": 6379}, "periodSeconds": 1},
            "resources": {"requests": {"cpu": "50m", "memory": "64Mi"},
                          "limits": {"cpu": "500m", "memory": "256Mi"}},
            "securityContext": {"runAsNonRoot": True, "allowPrivilegeEscalation": False},
        }]},
    })  # fmt: skip
    wait_for("Redis Ready", lambda: all_ready(pods(real_cluster, ns, "app=redis"), 1),
             timeout=120, interval=1.0, explain=lambda: pod_states(real_cluster, ns))  # fmt: skip
    assert redis_cli(real_cluster, ns, "ping").strip() == "PONG"
    yield "redis"
    real_cluster.kubectl("-n", ns, "delete", "pod", "redis", "--ignore-not-found", check=False)


def redis_cli(cluster: LocalCluster, namespace: str, *arguments: str) -> str:
    """``redis-cli`` in the Redis pod, authenticated by its ``REDISCLI_AUTH``."""
    return cluster.kubectl("-n", namespace, "exec", "redis", "--", "redis-cli",
                           *arguments).stdout  # fmt: skip


def storage_keys(cluster: LocalCluster, namespace: str, storage_namespace: str) -> list[str]:
    """The Redis keys of one Ray cluster: Ray names its GCS tables
    ``RAY<external storage namespace>@<table>``."""
    out = redis_cli(cluster, namespace, "--scan", "--pattern", f"RAY{storage_namespace}@*")
    return sorted(line for line in out.splitlines() if line.strip())


def ft_cluster(name: str, workers: int, annotations: dict[str, str] | None = None
               ) -> dict[str, Any]:  # fmt: skip
    spec = cluster_spec(workers)
    spec["headGroupSpec"]["rayStartParams"] = {"num-cpus": "0"}
    spec["gcsFaultToleranceOptions"] = {
        "redisAddress": "redis:6379",
        "redisPassword": {"valueFrom": FROM_SECRET},
    }  # fmt: skip
    metadata: dict[str, Any] = {"name": name}
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": metadata, "spec": spec}


def ray_states(cluster: LocalCluster, namespace: str) -> list[object]:
    """``pod_states``, and the end of each head's GCS log: what a head that never turns
    Ready was doing (a GCS that cannot reach Redis says so there)."""
    states = pod_states(cluster, namespace)
    for head in pods(cluster, namespace, "ray.io/node-type=head"):
        log = cluster.kubectl("-n", namespace, "exec", head["metadata"]["name"], "-c",
                              "ray-head", "--", "bash", "-c",
                              "tail -n 12 /tmp/ray/session_latest/logs/gcs_server.out",
                              check=False)  # fmt: skip
        states.append((head["metadata"]["name"], (log.stdout + log.stderr)[-2500:]))
    return states


def start_ft_cluster(cluster: LocalCluster, namespace: str, name: str, workers: int,
                     annotations: dict[str, str] | None = None) -> None:  # fmt: skip
    """Apply a GCS FT cluster and wait for its pods Ready, with the finalizer on."""
    server_side_apply(cluster, namespace, ft_cluster(name, workers, annotations))
    wait_for(
        f"the head and {workers} worker(s) Ready by their probes",
        lambda: all_ready(pods(cluster, namespace, f"ray.io/cluster={name}"), 1 + workers),
        timeout=RAY_READY_SECONDS, interval=2.0, explain=lambda: ray_states(cluster, namespace),
    )  # fmt: skip
    raw = cluster.get_json("-n", namespace, "raycluster", name)
    assert FINALIZER in raw["metadata"].get("finalizers", []), raw["metadata"]


@dataclass(frozen=True)
class Deletion:
    took: float
    """Seconds from ``kubectl delete`` to the RayCluster gone."""
    jobs: list[Event]
    """Every change to the cluster's Jobs (the Redis cleanup Job) meanwhile."""
    heads: list[Event]
    """Every change to its head pod meanwhile."""
    started: float

    def outcomes(self) -> list[str]:
        return sorted({job_outcome(e.object) for e in self.jobs} - {""})

    def when(self, events: list[Event], kind: str) -> list[str]:
        return [f"{e.at - self.started:.1f} s" for e in events if e.type == kind]


def delete_cluster(cluster: LocalCluster, namespace: str, name: str) -> Deletion:
    """Delete the RayCluster and wait for it to be gone, recording its Jobs and head."""
    kube = shared_client(cluster)
    with (
        Recorder(kube, JOB, namespace, label_selector=f"ray.io/cluster={name}") as jobs,
        Recorder(kube, POD, namespace,
                 label_selector=f"ray.io/cluster={name},ray.io/node-type=head") as heads,
    ):  # fmt: skip
        started = time.monotonic()
        cluster.kubectl("-n", namespace, "delete", "raycluster", name, "--wait=false")
        wait_for("the RayCluster gone", lambda: gone(cluster, namespace, RAY_CLUSTER, name),
                 timeout=DELETION_SECONDS, interval=1.0,
                 explain=lambda: (pod_states(cluster, namespace), [
                     (e.type, e.object.get("status")) for e in jobs.events]))  # fmt: skip
        took = time.monotonic() - started
    return Deletion(took, list(jobs.events), list(heads.events), started)


def job_outcome(job: dict[str, Any]) -> str:
    for condition in (job.get("status") or {}).get("conditions") or ():
        if condition.get("status") == "True" and condition.get("type") in ("Complete", "Failed"):
            return str(condition["type"])
    return ""


def test_a_new_head_recovers_from_redis_and_deletion_empties_it(
    real_cluster: LocalCluster, ray_namespace: str, redis: str, request: pytest.FixtureRequest
) -> None:
    ns, name = ray_namespace, "ft"
    operator = request.node.callspec.params["ray_namespace"]
    start_ft_cluster(real_cluster, ns, name, workers=1)
    before = count_twice(real_cluster, ns, name)
    storage_namespace = before.head["metadata"]["annotations"]["ray.io/external-storage-namespace"]
    keys_before = storage_keys(real_cluster, ns, storage_namespace)
    assert keys_before, f"no RAY{storage_namespace}@* keys in Redis"
    loss = lose_the_head(real_cluster, ns, name, before)
    print(f"\n{operator}, GCS FT: {loss.describe(before)}; {len(keys_before)} keys in Redis")

    deletion = delete_cluster(real_cluster, ns, name)
    outcomes = deletion.outcomes()
    keys_after = storage_keys(real_cluster, ns, storage_namespace)
    print(
        f"{operator}, GCS FT deletion: {deletion.took:.1f} s (head gone at "
        f"{deletion.when(deletion.heads, 'DELETED')}, cleanup Job created at "
        f"{deletion.when(deletion.jobs, 'ADDED')}); cleanup Job outcomes {outcomes}; "
        f"keys {len(keys_before)} -> {len(keys_after)}"
    )
    assert deletion.jobs and deletion.jobs[0].object["metadata"]["labels"].get(
        "ray.io/node-type") == "redis-cleanup", deletion.jobs  # fmt: skip
    assert outcomes == ["Complete"], [e.object.get("status") for e in deletion.jobs]
    assert keys_after == [], keys_after


def test_with_redis_gone_deletion_ends_at_the_deletion_timeout(
    real_cluster: LocalCluster, ray_namespace: str, redis: str, request: pytest.FixtureRequest
) -> None:
    ns, name = ray_namespace, "ft-stuck"
    operator = request.node.callspec.params["ray_namespace"]
    annotations = {"ray.io/gcs-ft-deletion-timeout": str(DELETION_TIMEOUT)}
    start_ft_cluster(real_cluster, ns, name, workers=0, annotations=annotations)
    real_cluster.kubectl("-n", ns, "delete", "pod", redis, "--wait=true", timeout=120)
    deletion = delete_cluster(real_cluster, ns, name)
    warnings = [
        e
        for e in real_cluster.get_json("-n", ns, "events")["items"]
        if e.get("involvedObject", {}).get("name") == name and e.get("type") == "Warning"
    ]
    reasons = sorted({e.get("reason", "") for e in warnings})
    outcomes = deletion.outcomes()
    print(
        f"\n{operator}, Redis gone: deletion took {deletion.took:.1f} s (timeout "
        f"{DELETION_TIMEOUT} s); head gone at {deletion.when(deletion.heads, 'DELETED')}, "
        f"cleanup Job created at {deletion.when(deletion.jobs, 'ADDED')}, outcomes {outcomes}; "
        f"Warning events {json.dumps([(e.get('reason'), e.get('message')) for e in warnings])}"
    )
    assert deletion.jobs, "no Redis cleanup Job was created"
    assert "Complete" not in outcomes, outcomes
    assert "ForceDeletedStuckCluster" in reasons, reasons
    assert DELETION_TIMEOUT - 2 <= deletion.took <= DELETION_TIMEOUT + 45, deletion.took
