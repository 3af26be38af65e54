"""The tests' own namespace teardown (``tests/kubeclient.py``): a namespace whose test left
an object with our operator's finalizer, and no operator to remove it, is gone soon after,
instead of Terminating for the rest of the session while kube-controller-manager retries
it every few seconds."""

from __future__ import annotations

from hack.localcluster import LocalCluster
from operator_runtime.runtime.errors import NotFound
from operator_runtime.runtime.kinds import NAMESPACE, RAY_CLUSTER
from tests.integration.raycluster.conftest import make_client, raycluster
from tests.kubeclient import fresh_namespace
from tests.waiting import wait_for

FINALIZER = "ray.io/gcs-ft-redis-cleanup-finalizer"


def test_a_namespace_left_with_a_finalized_raycluster_is_deleted(ray_crds: LocalCluster) -> None:
    client = make_client(ray_crds)
    with fresh_namespace(ray_crds) as name:
        manifest = raycluster("left", name, workers=0)
        manifest["metadata"]["finalizers"] = [FINALIZER]
        client.create(manifest)
        assert client.get(RAY_CLUSTER, "left", name)["metadata"]["finalizers"] == [FINALIZER]

    def gone() -> bool:
        try:
            client.get(NAMESPACE, name)
        except NotFound:
            return True
        return False

    # The namespace controller's first pass comes within seconds; a namespace held by a
    # finalizer would still be here after minutes.
    wait_for(f"namespace {name} to be deleted", gone, timeout=120, interval=1.0)
