"""Suspend and resume; the Recreate upgrade strategy and operator upgrades."""

from __future__ import annotations

from hack.localcluster import LocalCluster
from operator_runtime.api.annotations import AnnotationKey
from operator_runtime.controllers.raycluster import RayClusterOptions
from operator_runtime.render import RenderOptions
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.kinds import POD, RAY_CLUSTER, Object
from tests.integration.raycluster.conftest import (
    RunningOperator,
    condition,
    get_cluster,
    live_pods,
    raycluster,
    running_operator,
    running_ready,
    settle,
)
from tests.integration.raycluster.watches import pod_ledger
from tests.kubeclient import edit
from tests.waiting import wait_for

IMAGE_2 = "rayproject/ray:2.53.0"


def _ready(client: KubeClient, namespace: str, name: str, pods: int) -> bool:
    found = live_pods(client, namespace, name)
    status = get_cluster(client, namespace, name).get("status") or {}
    return (
        len(found) == pods
        and all(running_ready(p) for p in found)
        and (status.get("readyWorkerReplicas") == pods - 1)
    )


def _condition_status(client: KubeClient, namespace: str, name: str, type_: str) -> str:
    found = condition(get_cluster(client, namespace, name), type_)
    return str(found["status"]) if found else ""


def test_suspend_deletes_every_pod_and_resume_recreates_them(
    operator: RunningOperator, client: KubeClient, namespace: str
) -> None:
    client.create(raycluster("nap", namespace, workers=3))
    wait_for("ready", lambda: _ready(client, namespace, "nap", 4), timeout=60)
    client.patch(RAY_CLUSTER, "nap", namespace, {"spec": {"suspend": True}})
    wait_for(
        "suspended",
        lambda: _condition_status(client, namespace, "nap", "RayClusterSuspended") == "True",
        timeout=30,
    )
    obj = get_cluster(client, namespace, "nap")
    assert live_pods(client, namespace, "nap") == []
    assert obj["status"]["state"] == "suspended"
    assert condition(obj, "RayClusterSuspending")["status"] == "False"  # type: ignore[index]
    provisioned = condition(obj, "RayClusterProvisioned")
    assert provisioned is not None and provisioned["status"] == "False"
    assert provisioned["message"] == "RayCluster has been suspended"

    client.patch(RAY_CLUSTER, "nap", namespace, {"spec": {"suspend": False}})
    wait_for("resumed", lambda: _ready(client, namespace, "nap", 4), timeout=60)
    wait_for(
        "provisioned again",
        lambda: _condition_status(client, namespace, "nap", "RayClusterProvisioned") == "True",
    )
    obj = get_cluster(client, namespace, "nap")
    assert condition(obj, "RayClusterSuspended")["status"] == "False"  # type: ignore[index]
    assert obj["status"]["state"] == "ready"


def _set_worker_image(client: KubeClient, namespace: str, name: str, image: str) -> None:
    def change(obj: Object) -> None:
        obj["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["image"] = image

    edit(client, RAY_CLUSTER, name, namespace, change)


def test_recreate_strategy_replaces_all_pods_on_an_image_change(
    operator: RunningOperator, client: KubeClient, namespace: str
) -> None:
    client.create(raycluster("rc", namespace, workers=2, upgradeStrategy={"type": "Recreate"}))
    wait_for("ready", lambda: _ready(client, namespace, "rc", 3), timeout=60)
    head = live_pods(client, namespace, "rc", "head")[0]
    assert head["metadata"]["annotations"][AnnotationKey.KUBERAY_VERSION] == "v1.7.0"
    old_hash = head["metadata"]["annotations"][AnnotationKey.UPGRADE_STRATEGY_RECREATE_HASH]
    with pod_ledger(client, namespace, "rc") as ledger:
        _set_worker_image(client, namespace, "rc", IMAGE_2)
        wait_for(
            "all pods replaced and ready",
            lambda: (
                ledger.deleted_of_initial() == ledger.initial and _ready(client, namespace, "rc", 3)
            ),
            timeout=60,
        )
        settle(2.0)
        assert len(ledger.new_pods()) == 3
    workers = live_pods(client, namespace, "rc", "worker")
    assert {p["spec"]["containers"][0]["image"] for p in workers} == {IMAGE_2}
    new_head = live_pods(client, namespace, "rc", "head")[0]
    assert (
        new_head["metadata"]["annotations"][AnnotationKey.UPGRADE_STRATEGY_RECREATE_HASH]
        != old_hash
    )


def test_without_the_strategy_an_image_change_recreates_nothing(
    operator: RunningOperator, client: KubeClient, namespace: str
) -> None:
    client.create(raycluster("keep", namespace, workers=2))
    wait_for("ready", lambda: _ready(client, namespace, "keep", 3), timeout=60)
    with pod_ledger(client, namespace, "keep") as ledger:
        _set_worker_image(client, namespace, "keep", IMAGE_2)
        settle(3.0)
        assert ledger.deleted_of_initial() == set() and ledger.new_pods() == set()


def test_an_operator_upgrade_only_restamps_the_head_pod(
    ray_crds: LocalCluster, client: KubeClient, namespace: str
) -> None:
    old = RayClusterOptions(render=RenderOptions(kuberay_version="v1.6.0"))
    with running_operator(ray_crds, namespace, old):
        client.create(raycluster("upg", namespace, workers=2, upgradeStrategy={"type": "Recreate"}))
        wait_for("ready", lambda: _ready(client, namespace, "upg", 3), timeout=60)
    head = live_pods(client, namespace, "upg", "head")[0]
    annotations = head["metadata"]["annotations"]
    assert annotations[AnnotationKey.KUBERAY_VERSION] == "v1.6.0"
    # The old operator may have hashed the spec differently.
    client.patch(
        POD,
        head["metadata"]["name"],
        namespace,
        {
            "metadata": {
                "annotations": {
                    AnnotationKey.UPGRADE_STRATEGY_RECREATE_HASH.value: "HASHED-BY-THE-OLD-OPERATOR"
                }
            }
        },
    )
    with pod_ledger(client, namespace, "upg") as ledger, running_operator(ray_crds, namespace):

        def restamped() -> bool:
            pod = client.get(POD, head["metadata"]["name"], namespace)
            stamps = pod["metadata"]["annotations"]
            return stamps[AnnotationKey.KUBERAY_VERSION] == "v1.7.0" and stamps[
                AnnotationKey.UPGRADE_STRATEGY_RECREATE_HASH
            ] not in ("HASHED-BY-THE-OLD-OPERATOR", "")

        wait_for("head pod restamped", restamped, timeout=30)
        settle(3.0)
        assert ledger.deleted_of_initial() == set() and ledger.new_pods() == set()
        # The strategy still works after the restamp: a real change recreates.
        _set_worker_image(client, namespace, "upg", IMAGE_2)
        wait_for("pods replaced", lambda: ledger.deleted_of_initial() == ledger.initial, timeout=30)
