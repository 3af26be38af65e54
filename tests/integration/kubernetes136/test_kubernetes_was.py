"""Our operator with ``--feature-gates=KubernetesWAS=true`` against Kubernetes 1.36's own
workload-aware scheduling: the API server serving ``scheduling.k8s.io/v1alpha2`` and the
real kube-scheduler's GangScheduling plugin (this directory's control plane turns both
on), on kwok nodes. The shape is ``batch/test_gang_operator.py``'s for Volcano: each test
gets a pool of its own 2-CPU kwok nodes (labelled and tainted for it alone), then

1. a labelled RayCluster of 5 one-CPU pods on 4 CPUs: our Workload and PodGroup (gang of
   5), every pod naming the PodGroup, and NONE of them bound while they cannot all fit;
   a labelled cluster of 2 pods behind it is bound and becomes ready; two more nodes and
   the big one's 5 are bound too;
2. the same unfitting cluster without the label: no Workload, no PodGroup, and the
   default scheduler binds the 4 pods that fit (what the gang prevents above);
3. a replica change: the Workload and PodGroup are deleted and made again (new UIDs) with
   the new minCount, and the added worker is bound; a PodGroup deleted by hand (Kubernetes
   holds it with its protection finalizer) is made again from its events.

The operator refusing to start where the API is not served (1.34) is
``batch/test_kubernetes_was_refused.py``, on the session's control plane.
"""

from __future__ import annotations

import time
from typing import Any

from hack.localcluster import LocalCluster
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.kinds import RAY_CLUSTER, WORKLOAD, WORKLOAD_POD_GROUP
from tests.integration.batch.test_gang_operator import (  # noqa: F401 (a fixture)
    BIND_TIMEOUT,
    GROUP_AGAIN_TIMEOUT,
    REQUEUE_TIMEOUT,
    STILL_PENDING_SECONDS,
    add_nodes,
    all_bound,
    bound,
    gang_cluster,
    pods_of,
    pool,
    report,
    state,
)
from tests.operatorprocess import OperatorProcess
from tests.waiting import wait_for

GATE = "--feature-gates=KubernetesWAS=true"
GANG = {"ray.io/gang-scheduling-enabled": "true"}
PROTECTION = "scheduling.k8s.io/podgroup-protection"


def workload(kube: KubeClient, namespace: str, cluster: str) -> dict[str, Any] | None:
    return kube.find(WORKLOAD, cluster, namespace)


def pod_group(kube: KubeClient, namespace: str, cluster: str) -> dict[str, Any] | None:
    return kube.find(WORKLOAD_POD_GROUP, f"{cluster}-cluster", namespace)


def min_counts(kube: KubeClient, namespace: str, cluster: str) -> tuple[int | None, int | None]:
    found, group = workload(kube, namespace, cluster), pod_group(kube, namespace, cluster)
    return (
        found["spec"]["podGroupTemplates"][0]["schedulingPolicy"]["gang"]["minCount"]
        if found else None,
        group["spec"]["schedulingPolicy"]["gang"]["minCount"] if group else None,
    )  # fmt: skip


def _both(kube: KubeClient, namespace: str, cluster: str) -> tuple[Any, Any] | None:
    made, group = workload(kube, namespace, cluster), pod_group(kube, namespace, cluster)
    return (made, group) if made is not None and group is not None else None


def scheduled(group: dict[str, Any] | None) -> str:
    """The PodGroupScheduled condition's status ("" while the scheduler has set none)."""
    for condition in ((group or {}).get("status") or {}).get("conditions") or ():
        if condition.get("type") == "PodGroupScheduled":
            return str(condition.get("status"))
    return ""


def test_the_control_plane_serves_the_workload_api(local_cluster: LocalCluster) -> None:
    found = local_cluster.kubectl("api-resources", "--api-group=scheduling.k8s.io", "-o", "name")
    names = found.stdout.split()
    assert {"workloads.scheduling.k8s.io", "podgroups.scheduling.k8s.io"} <= set(names), names


def test_only_a_whole_gang_is_bound(
    ray_crds: LocalCluster,
    kube: KubeClient,
    namespace: str,
    pool: list[str],  # noqa: F811
) -> None:
    add_nodes(ray_crds, namespace, pool, 2)  # 4 CPUs
    with OperatorProcess(ray_crds.kubeconfig, namespace, GATE):
        big_created = time.monotonic()
        kube.create(gang_cluster("big", namespace, 4, GANG))  # 5 CPUs
        wait_for("the big cluster's 5 pods", lambda: len(pods_of(kube, namespace, "big")) == 5,
                 60, 0.1, explain=lambda: bound(kube, namespace, "big"))  # fmt: skip
        for pod in pods_of(kube, namespace, "big"):
            assert pod["spec"]["schedulerName"] == "default-scheduler", pod["spec"]
            assert pod["spec"]["schedulingGroup"] == {"podGroupName": "big-cluster"}
        _check_objects(kube, namespace, "big", min_count=5)
        deadline = time.monotonic() + STILL_PENDING_SECONDS
        while time.monotonic() < deadline:  # none bound, watched the whole time
            seen = bound(kube, namespace, "big")
            assert not any(seen.values()), f"a pod of the unfitting gang was bound: {seen}"
            time.sleep(0.2)
        small_created = time.monotonic()
        kube.create(gang_cluster("small", namespace, 1, GANG))
        wait_for("the small cluster bound", lambda: all_bound(kube, namespace, "small", 2),
                 BIND_TIMEOUT, 0.1, explain=lambda: bound(kube, namespace, "small"))  # fmt: skip
        small_bound = time.monotonic() - small_created
        wait_for("the small cluster ready", lambda: state(kube, namespace, "small") == "ready",
                 BIND_TIMEOUT, 0.1)  # fmt: skip
        wait_for("small's PodGroupScheduled", lambda: scheduled(
            pod_group(kube, namespace, "small")) == "True", 30, 0.2)  # fmt: skip
        seen = bound(kube, namespace, "big")
        assert not any(seen.values()), f"the big gang was bound with 2 of 4 CPUs left: {seen}"
        assert scheduled(pod_group(kube, namespace, "big")) != "True"
        nodes_added = time.monotonic()
        add_nodes(ray_crds, namespace, pool, 2)  # 8 CPUs, 2 taken: 6 free >= 5
        wait_for("the big cluster bound", lambda: all_bound(kube, namespace, "big", 5),
                 REQUEUE_TIMEOUT, 0.05, explain=lambda: bound(kube, namespace, "big"))  # fmt: skip
        big_bound = time.monotonic() - nodes_added
        wait_for("the big cluster ready", lambda: state(kube, namespace, "big") == "ready",
                 BIND_TIMEOUT, 0.05)  # fmt: skip
    report("Kubernetes 1.36 GangScheduling (KubernetesWAS)", {
        "small: created -> all bound": small_bound,
        "big: nodes added -> all 5 bound": big_bound,
        "big: created -> ready (incl. waiting for capacity)": time.monotonic() - big_created,
    })  # fmt: skip


def _check_objects(kube: KubeClient, namespace: str, cluster: str, *, min_count: int) -> None:
    uid = kube.get(RAY_CLUSTER, cluster, namespace)["metadata"]["uid"]
    made, group = wait_for(f"{cluster}'s Workload and PodGroup",
                           lambda: _both(kube, namespace, cluster), 30, 0.1)  # fmt: skip
    for obj in (made, group):
        (owner,) = obj["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
            "RayCluster", cluster, uid, True
        )  # fmt: skip
        assert obj["metadata"]["labels"]["ray.io/cluster"] == cluster
    assert made["spec"]["controllerRef"] == {
        "apiGroup": "ray.io", "kind": "RayCluster", "name": cluster
    }  # fmt: skip
    assert group["spec"]["podGroupTemplateRef"] == {
        "workload": {"workloadName": cluster, "podGroupTemplateName": "cluster"}
    }
    assert min_counts(kube, namespace, cluster) == (min_count, min_count)


def test_an_unlabelled_cluster_gets_no_gang(
    ray_crds: LocalCluster,
    kube: KubeClient,
    namespace: str,
    pool: list[str],  # noqa: F811
) -> None:
    add_nodes(ray_crds, namespace, pool, 2)  # 4 CPUs
    with OperatorProcess(ray_crds.kubeconfig, namespace, GATE):
        kube.create(gang_cluster("loose", namespace, 4, {}))  # 5 CPUs
        wait_for("4 of loose's 5 pods bound", lambda: sum(
            1 for node in bound(kube, namespace, "loose").values() if node) == 4,
            BIND_TIMEOUT, 0.1, explain=lambda: bound(kube, namespace, "loose"))  # fmt: skip
        for pod in pods_of(kube, namespace, "loose"):
            assert "schedulingGroup" not in pod["spec"], pod["spec"]
        assert (workload(kube, namespace, "loose"), pod_group(kube, namespace, "loose")) == (
            None, None
        )  # fmt: skip


def test_a_replica_change_replaces_the_workload_and_pod_group(
    ray_crds: LocalCluster,
    kube: KubeClient,
    namespace: str,
    pool: list[str],  # noqa: F811
) -> None:
    add_nodes(ray_crds, namespace, pool, 2)  # 4 CPUs
    with OperatorProcess(ray_crds.kubeconfig, namespace, GATE):
        kube.create(gang_cluster("grow", namespace, 1, GANG))
        wait_for("grow ready", lambda: state(kube, namespace, "grow") == "ready", BIND_TIMEOUT)
        _check_objects(kube, namespace, "grow", min_count=2)
        uids = {
            obj["metadata"]["uid"]
            for obj in (workload(kube, namespace, "grow"), pod_group(kube, namespace, "grow"))
            if obj is not None
        }
        kube.patch(RAY_CLUSTER, "grow", namespace,
                   [{"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": 2}],
                   patch_type="json")  # fmt: skip
        wait_for("the gang replaced with minCount 3",
                 lambda: min_counts(kube, namespace, "grow") == (3, 3), 60, 0.1,
                 explain=lambda: min_counts(kube, namespace, "grow"))  # fmt: skip
        again = (workload(kube, namespace, "grow"), pod_group(kube, namespace, "grow"))
        assert not uids & {obj["metadata"]["uid"] for obj in again if obj is not None}
        wait_for("grow's 3 pods bound and ready", lambda: all_bound(kube, namespace, "grow", 3)
                 and state(kube, namespace, "grow") == "ready", BIND_TIMEOUT, 0.1,
                 explain=lambda: bound(kube, namespace, "grow"))  # fmt: skip
        for pod in pods_of(kube, namespace, "grow"):
            assert pod["spec"]["schedulingGroup"] == {"podGroupName": "grow-cluster"}
        # Deleted by hand, the PodGroup (held by Kubernetes' protection finalizer while
        # bound pods name it) is taken off it and made again from its events, well inside
        # the 300 s resync of a settled cluster.
        group = pod_group(kube, namespace, "grow")
        assert group is not None
        assert PROTECTION in group["metadata"].get("finalizers", []), group["metadata"]
        ray_crds.kubectl("-n", namespace, "delete", "podgroups.scheduling.k8s.io",
                         "grow-cluster", "--wait=false")  # fmt: skip
        wait_for(
            "the PodGroup made again", lambda: _made_again(kube, namespace, group),
            GROUP_AGAIN_TIMEOUT, 0.2, explain=lambda: pod_group(kube, namespace, "grow"),
        )  # fmt: skip
        assert min_counts(kube, namespace, "grow") == (3, 3)


def _made_again(kube: KubeClient, namespace: str, old: dict[str, Any]) -> bool:
    new = pod_group(kube, namespace, "grow")
    return (
        new is not None
        and new["metadata"]["uid"] != old["metadata"]["uid"]
        and not new["metadata"].get("deletionTimestamp")
    )
