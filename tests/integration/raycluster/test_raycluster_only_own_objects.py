"""The operator acts only on what it owns: pods it is the controller of (not whatever
carries its labels) and a RocksDB PVC it created. (A worker stuck Terminating:
test_raycluster_terminating_pods.py.)"""

from __future__ import annotations

from typing import Any

from hack.localcluster import LocalCluster
from operator_runtime.api import FeatureGates
from operator_runtime.api.annotations import AnnotationKey
from operator_runtime.controllers.raycluster import RayClusterOptions
from operator_runtime.render import RenderOptions
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.errors import NotFound
from operator_runtime.runtime.kinds import PERSISTENT_VOLUME_CLAIM, POD, RAY_CLUSTER, Object
from operator_runtime.runtime.reconcile import controlled_by
from tests.integration.raycluster.conftest import (
    RunningOperator,
    container,
    events,
    get_cluster,
    live_pods,
    poke,
    raycluster,
    running_operator,
    running_ready,
    set_replicas,
    settle,
)
from tests.waiting import wait_for


def _ready_workers(client: KubeClient, namespace: str, name: str) -> list[Object]:
    uid = get_cluster(client, namespace, name)["metadata"]["uid"]
    return [
        p
        for p in live_pods(client, namespace, name, "worker")
        if running_ready(p) and controlled_by(p, uid)
    ]


def _foreign_worker(namespace: str, cluster: str) -> dict[str, Any]:
    """A pod someone else made, wearing the labels of a worker of ``cluster``."""
    labels = {
        "ray.io/cluster": cluster,
        "ray.io/node-type": "worker",
        "ray.io/group": "small",
        "ray.io/is-ray-node": "yes",
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "impostor", "namespace": namespace, "labels": labels},
        "spec": {"containers": [container("mine")]},
    }


def _alive(client: KubeClient, namespace: str, name: str) -> bool:
    try:
        pod = client.get(POD, name, namespace)
    except NotFound:
        return False
    return not pod["metadata"].get("deletionTimestamp")


def test_a_foreign_pod_with_worker_labels_is_neither_counted_nor_deleted_on_scale_down(
    operator: RunningOperator, client: KubeClient, namespace: str
) -> None:
    client.create(raycluster("own", namespace, workers=2))
    wait_for("2 workers", lambda: len(_ready_workers(client, namespace, "own")) == 2, timeout=60)
    client.create(_foreign_worker(namespace, "own"))
    poke(client, namespace, "own", "1")
    settle(3)
    # Old code: 3 labelled pods for 2 replicas, so one was deleted (the impostor or ours).
    assert _alive(client, namespace, "impostor"), "the operator deleted a pod it does not own"
    assert len(_ready_workers(client, namespace, "own")) == 2

    set_replicas(client, namespace, "own", 1)
    wait_for("1 worker", lambda: len(_ready_workers(client, namespace, "own")) == 1, timeout=30)
    settle(2)
    assert len(_ready_workers(client, namespace, "own")) == 1
    assert _alive(client, namespace, "impostor")


def test_suspend_deletes_our_pods_and_leaves_a_foreign_labelled_pod(
    operator: RunningOperator, client: KubeClient, namespace: str
) -> None:
    client.create(raycluster("nap", namespace, workers=1))
    wait_for("1 worker", lambda: len(_ready_workers(client, namespace, "nap")) == 1, timeout=60)
    client.create(_foreign_worker(namespace, "nap"))
    client.patch(RAY_CLUSTER, "nap", namespace, {"spec": {"suspend": True}})
    wait_for(
        "our pods gone",
        lambda: (
            [p["metadata"]["name"] for p in live_pods(client, namespace, "nap")] == ["impostor"]
        ),
        timeout=30,
    )
    settle(2)
    assert _alive(client, namespace, "impostor"), "suspend deleted a pod it does not own"


def test_a_gcs_pvc_someone_else_made_is_used_but_never_adopted(
    ray_crds: LocalCluster, client: KubeClient, namespace: str
) -> None:
    gates = FeatureGates.parse("GCSFaultToleranceEmbeddedStorage=true")
    options = RayClusterOptions(render=RenderOptions(feature_gates=gates))
    theirs = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        # The label puts it in the operator's PVC cache, as it would a claim of ours.
        "metadata": {
            "name": "rocks-gcs-pvc",
            "namespace": namespace,
            "labels": {"ray.io/cluster": "rocks"},
        },
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    client.create(theirs)
    storage = {"backend": "rocksdb", "storage": {"size": "1Gi"}}
    rocks = raycluster("rocks", namespace, workers=0, gcsFaultToleranceOptions=storage)
    with running_operator(ray_crds, namespace, options):
        client.create(rocks)
        wait_for(
            "a warning about the foreign claim",
            lambda: [
                e
                for e in events(client, namespace, "FailedToCreatePVC", "rocks")
                if "not created by this RayCluster" in e.get("note", "")
            ],
            timeout=30,
        )
        settle(2)
    pvc = client.get(PERSISTENT_VOLUME_CLAIM, "rocks-gcs-pvc", namespace)
    # Old code added a controller reference: the claim died with the cluster.
    assert not pvc["metadata"].get("ownerReferences")


def test_our_own_retained_gcs_pvc_is_adopted_when_retention_is_turned_off(
    ray_crds: LocalCluster, client: KubeClient, namespace: str
) -> None:
    gates = FeatureGates.parse("GCSFaultToleranceEmbeddedStorage=true")
    options = RayClusterOptions(render=RenderOptions(feature_gates=gates))
    storage = {"backend": "rocksdb", "storage": {"size": "1Gi", "deletionPolicy": "Retain"}}
    with running_operator(ray_crds, namespace, options):
        created = client.create(
            raycluster("keep", namespace, workers=0, gcsFaultToleranceOptions=storage)
        )
        uid = created["metadata"]["uid"]

        def claim() -> Object | None:
            try:
                return client.get(PERSISTENT_VOLUME_CLAIM, "keep-gcs-pvc", namespace)
            except NotFound:
                return None

        pvc = wait_for("the claim", claim)
        assert pvc["metadata"]["annotations"][AnnotationKey.GCS_STORAGE_CREATOR_UID] == uid
        assert not pvc["metadata"].get("ownerReferences")
        client.patch(
            RAY_CLUSTER,
            "keep",
            namespace,
            {
                "spec": {
                    "gcsFaultToleranceOptions": {"storage": {"deletionPolicy": "DeleteWithCluster"}}
                }
            },
        )

        def adopted() -> bool:
            refs = (claim() or {"metadata": {}})["metadata"].get("ownerReferences") or ()
            return any(r["uid"] == uid and r.get("controller") for r in refs)

        wait_for("adopted", adopted)
