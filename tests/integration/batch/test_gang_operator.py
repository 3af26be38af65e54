"""Our operator with ``--batch-scheduler`` against the real gang schedulers (Volcano's and
scheduler-plugins' Coscheduling, built from their Go modules, ``hack/gang``), beside the
control plane's kube-scheduler on kwok nodes.

Each test gets a pool of its own small kwok nodes (2 CPU each, tainted and labelled for
the test alone, so no other test's pod lands there and the capacity is exactly what the
test says), then:

1. a RayCluster of 5 one-CPU pods on a pool of 4 CPUs: the operator makes the gang's
   PodGroup and pods, and NONE of them is bound while they cannot all fit;
2. a smaller RayCluster (2 pods) created behind it is bound and becomes ready: the big
   gang does not starve it;
3. two more nodes: the big one's 5 pods are all bound and it becomes ready. The seconds
   from the capacity to all bound and to ``state: ready`` are printed (issue 30's
   admission-to-ready times).
"""

from __future__ import annotations

import copy
import json
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hack.localcluster import LocalCluster, nodes, start_for_tests
from hack.localcluster.cluster import free_ports
from operator_runtime.render.batchscheduler import SCHEDULER_PLUGINS_SCHEDULER_NAME
from operator_runtime.runtime import kinds
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.kinds import POD, RAY_CLUSTER, RAY_JOB
from tests.integration.batch.test_gang_schedulers import (  # noqa: F401 (fixtures)
    coscheduler,
    volcano,
)
from tests.integration.raycluster.conftest import (  # noqa: F401 (fixtures)
    make_client,
    ray_crds,
    raycluster,
)
from tests.integration.rayjob.conftest import ClusterHosts, describe_job, job_status, rayjob
from tests.operatorprocess import OperatorProcess
from tests.rayhead import RayHead, module_ray_head, ray_head  # noqa: F401 (fixtures)
from tests.waiting import wait_for

POOL_LABEL = "pulumi-ray.test/gang-pool"
NODE_CPU = "2"
STILL_PENDING_SECONDS = 8.0
"""How long the big gang is watched for a bound pod while it cannot fit: Volcano runs a
session every 200 ms here, and Coscheduling's Permit wait is 10 s, so both have tried
(and, for Coscheduling, held pods at Permit) many times by then."""
BIND_TIMEOUT = 120.0
"""A generous bound on a gang that fits getting bound (scheduling periods are < 1 s; the
Coscheduling backoff of a rejected group adds its Permit wait)."""
SETTLE_SECONDS = 3.0
"""Past the 2 s within which a pod update that changes only the counts starts its pass."""
GROUP_AGAIN_TIMEOUT = 30.0
"""A PodGroup deleted by hand is made again from its deletion event: one pass, far
inside the 300 s resync of a settled cluster (which would otherwise have been the
bound)."""
REQUEUE_TIMEOUT = 360.0
"""The bound once capacity arrives for a gang that was refused: a scheduler retries a pod
that sat in its unschedulable pool at its next flush even when no event it watches says
it might fit now (a pod last refused by Coscheduling's PreFilter may not be moved by a
node's arrival). Volcano's sessions retry every 200 ms; the Coscheduling scheduler here
flushes every 20 s (``coscheduler``), kube-scheduler's default is 5 minutes, which this
bound still covers."""


@pytest.fixture
def kube(ray_crds: LocalCluster) -> KubeClient:  # noqa: F811
    return make_client(ray_crds)


@pytest.fixture
def pool(ray_crds: LocalCluster, namespace: str) -> Iterator[list[str]]:  # noqa: F811
    """The test's node names (none yet: ``add_nodes``); deleted at the end."""
    created: list[str] = []
    yield created
    if created:
        ray_crds.kubectl("delete", "node", *created, "--wait=false", check=False)


def add_nodes(cluster: LocalCluster, namespace: str, created: list[str], count: int) -> None:
    """``count`` kwok nodes of ``NODE_CPU`` CPUs for ``namespace``'s pods alone (label and
    NoSchedule taint), waited for Ready."""
    manifests = []
    for _ in range(count):
        name = f"gang-{namespace}-{len(created)}"
        created.append(name)
        node = nodes.node_manifest(name, gpus=False)
        capacity = {"cpu": NODE_CPU, "memory": "16Gi", "pods": "110"}
        node["status"] = {"capacity": capacity, "allocatable": capacity}
        node["metadata"]["labels"][POOL_LABEL] = namespace  # type: ignore[index]
        node["spec"] = {"taints": [{"key": POOL_LABEL, "value": namespace, "effect": "NoSchedule"}]}
        manifests.append(node)
    cluster.kubectl("apply", "-f", "-", input=_list(manifests))
    names = created[-count:]
    wait_for(
        f"nodes {names} Ready",
        lambda: all(_ready(cluster, name) for name in names),
        60, 0.2,
    )  # fmt: skip


def _list(items: list[dict[str, object]]) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items})


def _ready(cluster: LocalCluster, name: str) -> bool:
    node = cluster.get_json("node", name)
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in node.get("status", {}).get("conditions", [])
    )


def gang_cluster(name: str, namespace: str, workers: int, labels: dict[str, str]) -> dict[str, Any]:
    """A RayCluster of a 1-CPU head and ``workers`` 1-CPU workers, all on the pool."""
    manifest = raycluster(name, namespace, workers=workers)
    manifest["metadata"]["labels"] = dict(labels)
    spec = manifest["spec"]
    for group in [spec["headGroupSpec"], *spec["workerGroupSpecs"]]:
        group.setdefault("rayStartParams", {})
        pod_spec = group["template"]["spec"]
        pod_spec["nodeSelector"] = {POOL_LABEL: namespace}
        pod_spec["tolerations"] = [
            {"key": POOL_LABEL, "operator": "Equal", "value": namespace, "effect": "NoSchedule"}
        ]
    return manifest


def pods_of(kube: KubeClient, namespace: str, cluster: str) -> list[dict[str, Any]]:
    items, _ = kube.list_all(POD, namespace, label_selector=f"ray.io/cluster={cluster}")
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def bound(kube: KubeClient, namespace: str, cluster: str) -> dict[str, str]:
    return {
        p["metadata"]["name"]: p["spec"].get("nodeName", "")
        for p in pods_of(kube, namespace, cluster)
    }


def state(kube: KubeClient, namespace: str, name: str) -> str:
    found = kube.find(RAY_CLUSTER, name, namespace) or {}
    return str((found.get("status") or {}).get("state") or "")


def all_bound(kube: KubeClient, namespace: str, cluster: str, count: int) -> bool:
    found = bound(kube, namespace, cluster)
    return len(found) == count and all(found.values())


def run_gang_scenario(
    cluster: LocalCluster,
    kube: KubeClient,
    namespace: str,
    pool_nodes: list[str],
    labels: dict[str, str],
    scheduler_name: str,
) -> dict[str, float]:
    """Steps 1-3 of the module docstring; returns the measured seconds."""
    add_nodes(cluster, namespace, pool_nodes, 2)  # 4 CPUs
    big_created = time.monotonic()
    kube.create(gang_cluster("big", namespace, 4, labels))  # 5 CPUs
    wait_for(
        "the big cluster's 5 pods", lambda: len(pods_of(kube, namespace, "big")) == 5, 60, 0.1,
        explain=lambda: bound(kube, namespace, "big"),
    )  # fmt: skip
    for pod in pods_of(kube, namespace, "big"):
        assert pod["spec"]["schedulerName"] == scheduler_name, pod["spec"]
    # 1. none bound while the gang cannot fit, watched the whole time
    deadline = time.monotonic() + STILL_PENDING_SECONDS
    while time.monotonic() < deadline:
        seen = bound(kube, namespace, "big")
        assert not any(seen.values()), f"a pod of the unfitting gang was bound: {seen}"
        time.sleep(0.2)
    # 2. a smaller gang behind it fits in the same 4 CPUs and is not starved
    small_created = time.monotonic()
    kube.create(gang_cluster("small", namespace, 1, labels))
    wait_for(
        "the small cluster bound", lambda: all_bound(kube, namespace, "small", 2),
        BIND_TIMEOUT, 0.1, explain=lambda: (bound(kube, namespace, "small"),
                                            bound(kube, namespace, "big")),
    )  # fmt: skip
    small_bound = time.monotonic() - small_created
    wait_for("the small cluster ready", lambda: state(kube, namespace, "small") == "ready",
             BIND_TIMEOUT, 0.1)  # fmt: skip
    small_ready = time.monotonic() - small_created
    seen = bound(kube, namespace, "big")
    assert not any(seen.values()), f"the big gang was bound with 2 of 4 CPUs left: {seen}"
    # 3. capacity for the big gang: 8 CPUs, 2 taken by the small one, 6 free >= 5
    capacity_added = time.monotonic()
    add_nodes(cluster, namespace, pool_nodes, 2)
    nodes_ready = time.monotonic()
    wait_for(
        "the big cluster bound", lambda: all_bound(kube, namespace, "big", 5),
        REQUEUE_TIMEOUT, 0.05, explain=lambda: bound(kube, namespace, "big"),
    )  # fmt: skip
    big_bound = time.monotonic() - nodes_ready
    wait_for("the big cluster ready", lambda: state(kube, namespace, "big") == "ready",
             BIND_TIMEOUT, 0.05)  # fmt: skip
    big_ready = time.monotonic() - nodes_ready
    return {
        "small: created -> all bound": small_bound,
        "small: created -> ready": small_ready,
        "big: nodes Ready -> all 5 bound": big_bound,
        "big: nodes Ready -> ready": big_ready,
        "big: nodes added -> nodes Ready": nodes_ready - capacity_added,
        "big: created -> ready (incl. waiting for capacity)": time.monotonic() - big_created,
    }


def report(scheduler: str, seconds: dict[str, float]) -> None:
    print(f"\n{scheduler} gang, our operator:")
    for what, value in seconds.items():
        print(f"  {what}: {value:.2f} s")


def test_volcano_gangs_a_rayclusters_pods_made_by_our_operator(
    ray_crds: LocalCluster,  # noqa: F811
    volcano: Path,  # noqa: F811
    kube: KubeClient,
    namespace: str,
    pool: list[str],
) -> None:
    labels = {"volcano.sh/queue-name": "default"}
    with OperatorProcess(ray_crds.kubeconfig, namespace, "--batch-scheduler=volcano"):
        seconds = run_gang_scenario(ray_crds, kube, namespace, pool, labels, "volcano")
        group = ray_crds.get_json("-n", namespace, "podgroups.scheduling.volcano.sh", "ray-big-pg")
    report("volcano", seconds)
    spec = group["spec"]
    assert (spec["minMember"], spec["queue"]) == (5, "default"), spec
    assert spec["minResources"] == {"cpu": "5", "memory": "5Gi"}, spec
    assert group["metadata"]["ownerReferences"][0]["name"] == "big"
    assert group["status"]["phase"] in ("Running", "Inqueue"), group["status"]


def test_the_deprecated_flag_is_volcano_and_a_scale_up_resizes_the_group(
    ray_crds: LocalCluster,  # noqa: F811
    volcano: Path,  # noqa: F811
    kube: KubeClient,
    namespace: str,
    pool: list[str],
) -> None:
    add_nodes(ray_crds, namespace, pool, 2)
    manifest = gang_cluster("grow", namespace, 1, {"volcano.sh/queue-name": "default"})
    (metrics_port,) = free_ports(1)
    flags = ("--enable-batch-scheduler", f"--metrics-addr=127.0.0.1:{metrics_port}")
    with OperatorProcess(ray_crds.kubeconfig, namespace, *flags):
        kube.create(copy.deepcopy(manifest))
        wait_for("grow ready", lambda: state(kube, namespace, "grow") == "ready", BIND_TIMEOUT)

        def group() -> dict[str, Any]:
            return ray_crds.get_json(
                "-n", namespace, "podgroups.scheduling.volcano.sh", "ray-grow-pg"
            )["spec"]

        assert group()["minMember"] == 2
        kube.patch(RAY_CLUSTER, "grow", namespace,
                   [{"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": 3}],
                   patch_type="json")  # fmt: skip
        wait_for("the PodGroup resized", lambda: group()["minMember"] == 4, 60, 0.1,
                 explain=group)  # fmt: skip
        assert group()["minResources"]["cpu"] == "4"
        # Deleted by hand, the group comes back from its deletion event (the PodGroup
        # informer wakes its cluster), not at the 300 s resync of a settled cluster. The
        # cluster settles first, so no pass is waiting in the queue to absorb that event.
        wait_for("grow's 4 pods bound and ready", lambda: all_bound(kube, namespace, "grow", 4)
                 and state(kube, namespace, "grow") == "ready", BIND_TIMEOUT)  # fmt: skip
        time.sleep(SETTLE_SECONDS)
        ray_crds.kubectl("-n", namespace, "delete", "podgroups.scheduling.volcano.sh",
                         "ray-grow-pg", "--wait=true")  # fmt: skip
        wait_for("the PodGroup made again", lambda: _pod_group_exists(ray_crds, namespace),
                 GROUP_AGAIN_TIMEOUT, 0.2)  # fmt: skip
        assert group()["minMember"] == 4
        # Other events may wake the cluster too (the scheduler touching its pods); the
        # deletion event itself must have.
        assert _passes_started_by(metrics_port, "PodGroup/DELETED") >= 1


def _passes_started_by(port: int, source: str) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    wanted = f'controller="raycluster",source="{source}"'
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("operator_reconcile_triggers_total{") and wanted in line
    )


def _pod_group_exists(cluster: LocalCluster, namespace: str) -> bool:
    found = cluster.kubectl("-n", namespace, "get", "podgroups.scheduling.volcano.sh",
                            "ray-grow-pg", "--ignore-not-found", "-o", "name")  # fmt: skip
    return bool(found.stdout.strip())


def test_the_operator_refuses_to_start_without_the_schedulers_podgroups(
    tmp_path: Path, namespace: str
) -> None:
    # A control plane of its own: the shared one keeps Volcano's CRDs once a gang test
    # installed them. Without them the PodGroup informer would never sync, and no
    # controller would ever start.
    cluster = start_for_tests(tmp_path / "no-volcano")
    try:
        operator = OperatorProcess(cluster.kubeconfig, namespace, "--batch-scheduler=volcano")
        done = subprocess.run(operator.arguments, env=operator.env, capture_output=True,
                              text=True, timeout=120, check=False)  # fmt: skip
    finally:
        cluster.stop()
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert "--batch-scheduler=volcano" in output and "podgroups" in output, output


def test_coscheduling_gangs_a_rayclusters_pods_made_by_our_operator(
    ray_crds: LocalCluster,  # noqa: F811
    coscheduler: Path,  # noqa: F811
    kube: KubeClient,
    namespace: str,
    pool: list[str],
) -> None:
    labels = {"ray.io/gang-scheduling-enabled": "true"}
    with OperatorProcess(ray_crds.kubeconfig, namespace, "--batch-scheduler=scheduler-plugins"):
        seconds = run_gang_scenario(
            ray_crds, kube, namespace, pool, labels, SCHEDULER_PLUGINS_SCHEDULER_NAME
        )
        group = ray_crds.get_json("-n", namespace, "podgroups.scheduling.x-k8s.io", "big")
    report("scheduler-plugins", seconds)
    assert group["spec"]["minMember"] == 5, group["spec"]
    assert group["metadata"]["ownerReferences"][0]["kind"] == "RayCluster"


def gang_job(name: str, namespace: str) -> dict[str, Any]:
    """A K8sJobMode RayJob on Volcano's ``default`` queue, its cluster (head + 2 workers)
    on the pool; it is suspended before any Ray job could run, so it needs no Ray head."""
    cluster = gang_cluster(name, namespace, 2, {})
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name, "namespace": namespace,
                     "labels": {"volcano.sh/queue-name": "default"}},
        "spec": {"entrypoint": "python -c 'print(1)'", "shutdownAfterJobFinishes": True,
                 "rayClusterSpec": cluster["spec"]},
    }  # fmt: skip


def reasons(cluster: LocalCluster, namespace: str, name: str) -> list[str]:
    found = cluster.get_json("-n", namespace, "events.events.k8s.io")["items"]
    return [e.get("reason", "") for e in found if (e.get("regarding") or {}).get("name") == name]


def test_a_rayjobs_volcano_gang_covers_its_cluster_and_is_released_on_suspend(
    ray_crds: LocalCluster,  # noqa: F811
    volcano: Path,  # noqa: F811
    kube: KubeClient,
    namespace: str,
    pool: list[str],
) -> None:
    """KubeRay's RayJob gang: one PodGroup ``ray-<job>-pg`` made in Initializing (the
    cluster's 3 pods plus the submitter's resources), named by the cluster's pods, and
    zeroed with BatchSchedulerCleanedUp once suspending has deleted the cluster."""
    add_nodes(ray_crds, namespace, pool, 2)

    def group() -> dict[str, Any]:
        found = ray_crds.get_json("-n", namespace, "podgroups.scheduling.volcano.sh", "ray-job-pg")
        return dict(found["spec"])

    with OperatorProcess(ray_crds.kubeconfig, namespace, "--batch-scheduler=volcano"):
        kube.create(gang_job("job", namespace))
        cluster = wait_for(
            "the RayJob's cluster",
            lambda: (kube.get(RAY_JOB, "job", namespace).get("status") or {}).get("rayClusterName"),
            60, 0.1,
        )  # fmt: skip
        wait_for("its 3 pods bound", lambda: all_bound(kube, namespace, cluster, 3), BIND_TIMEOUT,
                 0.1, explain=lambda: bound(kube, namespace, cluster))  # fmt: skip
        spec = group()
        assert (spec["minMember"], spec["queue"]) == (3, "default"), spec
        # the cluster's 3 CPUs / 3 Gi plus the submitter's requests (500m / 200Mi)
        assert spec["minResources"] == {"cpu": "3500m", "memory": "3272Mi"}, spec
        assert kube.find(kinds.VOLCANO_POD_GROUP, f"ray-{cluster}-pg", namespace) is None
        for pod in pods_of(kube, namespace, cluster):
            annotations = pod["metadata"]["annotations"]
            assert annotations["scheduling.k8s.io/group-name"] == "ray-job-pg"
        kube.patch(RAY_JOB, "job", namespace, {"spec": {"suspend": True}})
        wait_for(
            "the RayJob Suspended",
            lambda: (kube.get(RAY_JOB, "job", namespace).get("status") or {}).get(
                "jobDeploymentStatus") == "Suspended",
            BIND_TIMEOUT, 0.1, explain=lambda: (kube.get(RAY_JOB, "job", namespace).get("status"),
                                                bound(kube, namespace, cluster)),
        )  # fmt: skip
        spec = group()
        assert spec.get("minMember", 0) == 0 and not spec.get("minResources"), spec
        wait_for("BatchSchedulerCleanedUp", lambda: "BatchSchedulerCleanedUp" in reasons(
            ray_crds, namespace, "job"), 30, 0.2)  # fmt: skip


def test_a_finished_rayjobs_volcano_gang_is_released(
    ray_crds: LocalCluster,  # noqa: F811
    volcano: Path,  # noqa: F811
    kube: KubeClient,
    namespace: str,
    ray_head: RayHead,  # noqa: F811
) -> None:
    """A RayJob that runs to Complete on a real Ray head (HTTPMode, the head's pod bound by
    Volcano on the default nodes): its group held the cluster while it ran, and is zeroed
    with BatchSchedulerCleanedUp once the finished job's cluster is deleted."""
    manifest = rayjob("done", namespace, ray_head, submissionMode="HTTPMode",
                      shutdownAfterJobFinishes=True)  # fmt: skip
    manifest["metadata"]["labels"] = {"volcano.sh/queue-name": "default"}

    def group() -> dict[str, Any]:
        found = kube.find(kinds.VOLCANO_POD_GROUP, "ray-done-pg", namespace)
        return dict((found or {}).get("spec") or {})

    with (
        ClusterHosts(kube, namespace),
        OperatorProcess(ray_crds.kubeconfig, namespace, "--batch-scheduler=volcano"),
    ):
        kube.create(manifest)
        held = wait_for("the RayJob's PodGroup", lambda: group().get("minMember") == 1 and group(),
                        60, 0.1)  # fmt: skip
        wait_for(
            "the RayJob Complete",
            lambda: job_status(kube, namespace, "done").get("jobDeploymentStatus") == "Complete",
            120, 0.1, explain=lambda: describe_job(kube, namespace, "done"),
        )  # fmt: skip
        wait_for("the group zeroed", lambda: not group().get("minMember"), 60, 0.1, explain=group)
        wait_for("BatchSchedulerCleanedUp", lambda: "BatchSchedulerCleanedUp" in reasons(
            ray_crds, namespace, "done"), 30, 0.2)  # fmt: skip
    assert held["minResources"] == {"cpu": "1", "memory": "1Gi"}, held
    assert not group().get("minResources"), group()
