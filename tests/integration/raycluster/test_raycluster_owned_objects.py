"""Objects around the pods (autoscaler RBAC, Ingress, Services, Secret) are owned by
the cluster and garbage-collected with it."""

from __future__ import annotations

from typing import Any

from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.errors import NotFound
from operator_runtime.runtime.kinds import (
    INGRESS,
    RAY_CLUSTER,
    ROLE,
    ROLE_BINDING,
    SECRET,
    SERVICE,
    SERVICE_ACCOUNT,
    ResourceKind,
)
from tests.integration.raycluster.conftest import (
    RunningOperator,
    container,
    get_cluster,
    live_pods,
    pods,
    raycluster,
    running_ready,
)
from tests.waiting import wait_for


def _exists(client: KubeClient, kind: ResourceKind, namespace: str, name: str) -> bool:
    try:
        client.get(kind, name, namespace)
    except NotFound:
        return False
    return True


def test_every_child_is_owned_and_garbage_collected_with_the_cluster(
    gc_knows_rayclusters: None, operator: RunningOperator, client: KubeClient, namespace: str
) -> None:
    manifest = raycluster(
        "full",
        namespace,
        workers=1,
        annotations={"ray.io/enable-serve-service": "true"},
        enableInTreeAutoscaling=True,
        authOptions={"mode": "token"},
    )
    manifest["spec"]["headGroupSpec"]["enableIngress"] = True
    manifest["spec"]["workerGroupSpecs"].append(
        {
            "groupName": "slice",
            "replicas": 1,
            "minReplicas": 0,
            "maxReplicas": 2,
            "numOfHosts": 2,
            "template": {"spec": {"containers": [container("ray-worker")]}},
        }
    )
    client.create(manifest)
    uid = get_cluster(client, namespace, "full")["metadata"]["uid"]
    children: list[tuple[ResourceKind, str]] = [
        (SERVICE_ACCOUNT, "full"),
        (ROLE, "full"),
        (ROLE_BINDING, "full"),
        (INGRESS, "full-head-ingress"),
        (SECRET, "full"),
        (SERVICE, "full-head-svc"),
        (SERVICE, "full-headless"),
        (SERVICE, "full-serve-svc"),
    ]
    for kind, name in children:
        obj = wait_for(f"{kind.kind} {name}", lambda k=kind, n=name: _get(client, k, namespace, n))  # type: ignore[misc]
        owner = obj["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["uid"], owner["controller"]) == ("RayCluster", uid, True)
    wait_for(
        "4 pods running",
        lambda: len([p for p in live_pods(client, namespace, "full") if running_ready(p)]) == 4,
        timeout=60,
    )
    head = live_pods(client, namespace, "full", "head")[0]
    assert head["spec"]["serviceAccountName"] == "full"
    assert [c["name"] for c in head["spec"]["containers"]] == ["ray-head", "autoscaler"]
    role = client.get(ROLE, "full", namespace)
    assert {"pods", "pods/resize", "rayclusters"} == {
        r for rule in role["rules"] for r in rule["resources"]
    }
    ingress = client.get(INGRESS, "full-head-ingress", namespace)
    backend = ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    assert backend == {"name": "full-head-svc", "port": {"number": 8265}}
    slice_pods = [
        p
        for p in live_pods(client, namespace, "full", "worker")
        if p["metadata"]["labels"]["ray.io/group"] == "slice"
    ]
    assert (
        len({p["metadata"]["labels"]["ray.io/worker-group-replica-name"] for p in slice_pods}) == 1
    )
    assert sorted(p["metadata"]["labels"]["ray.io/replica-host-index"] for p in slice_pods) == [
        "0",
        "1",
    ]

    # A drifted Ingress is put back.
    client.patch(
        INGRESS,
        "full-head-ingress",
        namespace,
        {"metadata": {"labels": {"ray.io/cluster": "someone-else"}}},
    )
    wait_for(
        "ingress repaired",
        lambda: (
            client.get(INGRESS, "full-head-ingress", namespace)["metadata"]["labels"][
                "ray.io/cluster"
            ]
            == "full"
        ),
    )

    client.delete(RAY_CLUSTER, "full", namespace)
    for kind, name in children:
        wait_for(
            f"{kind.kind} {name} collected",
            lambda k=kind, n=name: not _exists(client, k, namespace, n),
            timeout=30,
        )  # type: ignore[misc]
    wait_for(
        "pods collected", lambda: not pods(client, namespace, "ray.io/cluster=full"), timeout=30
    )


def _get(client: KubeClient, kind: ResourceKind, namespace: str, name: str) -> Any:
    try:
        return client.get(kind, name, namespace)
    except NotFound:
        return None
