"""GCS fault tolerance with the GCS's own storage on a volume (KubeRay v1.7.0's
GCSFaultToleranceEmbeddedStorage gate), on the real node: no Redis at all.

``gcsFaultToleranceOptions.backend: rocksdb`` with a ``storage`` of the node's default
StorageClass (kind's local-path provisioner, ``hack/node``): the operator makes the
``<cluster>-gcs-pvc`` claim, owned by the RayCluster, and mounts it in the head at
``/data/gcs`` with ``RAY_gcs_storage=rocksdb``. A head and a worker run Ray 2.60.0
(``hack.image.ray.NEWER``): the stand-in's Ray 2.52.1 has no such storage, which came
with ray#63657.

The head pod is deleted: the new head's GCS reopens the same volume, the worker pod is
the same pod with no restart, and the detached actor answers with its count intact
(``headloss.py``, the Redis scenario's very steps). Then the RayCluster is deleted: it
never had the Redis cleanup finalizer, and the claim goes with it (its default
``deletionPolicy: DeleteWithCluster``).

Ours alone: KubeRay v1.6.2, the version run beside it, has no such gate; v1.7.0's own
recovery e2e is skipped unless ``KUBERAY_TEST_EMBEDDED_GCS_FT=true``.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from hack.image.ray import NEWER
from hack.localcluster import LocalCluster
from hack.node import images
from operator_runtime.runtime.kinds import PERSISTENT_VOLUME_CLAIM, RAY_CLUSTER
from tests.node.harness import (
    RAY_PODS_GONE_SECONDS,
    all_ready,
    cluster_spec,
    gone,
    pod_states,
    pods,
    real_node,
    server_side_apply,
)
from tests.node.headloss import RECOVERY_SECONDS, count_twice, lose_the_head
from tests.waiting import wait_for

OPERATORS = ("ours",)
"""KubeRay v1.6.2 has no GCSFaultToleranceEmbeddedStorage gate."""
FEATURE_GATES = {"GCSFaultToleranceEmbeddedStorage": True}

RAY_READY_SECONDS = 420.0
"""As in test_ray_on_the_node.py: Ray pods on two loaded cores; the claim is bound when
the head is scheduled (WaitForFirstConsumer), its directory made by a helper pod."""
DELETION_SECONDS = 300.0
"""From the RayCluster's delete to it and its claim gone: the pods stop, the garbage
collector deletes the claim it owned."""
pytestmark = pytest.mark.timeout(
    RAY_READY_SECONDS + 2 * RECOVERY_SECONDS + DELETION_SECONDS + RAY_PODS_GONE_SECONDS
)
"""The scenario's own bounds in a row, and the namespace's clean-up after it."""
FINALIZER = "ray.io/gcs-ft-redis-cleanup-finalizer"


@pytest.fixture(scope="module")
def newer_ray(real_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> str:
    """Ray 2.60.0's image loaded on the node (only this module runs it); its reference."""
    directory = tmp_path_factory.mktemp("newer-ray")
    image = images.node_image(NEWER.built().layout, NEWER.image, directory / "ray.tar")
    real_node(real_cluster).ctr("images", "import", str(image.tar))
    return NEWER.image


def embedded_cluster(name: str, image: str) -> dict[str, Any]:
    spec = cluster_spec(1, image=image)
    spec["rayVersion"] = NEWER.version
    spec["headGroupSpec"]["rayStartParams"] = {"num-cpus": "0"}
    spec["gcsFaultToleranceOptions"] = {"backend": "rocksdb", "storage": {"size": "1Gi"}}
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": name},
            "spec": spec}  # fmt: skip


def test_a_new_head_recovers_from_its_volume_and_the_claim_goes_with_the_cluster(
    real_cluster: LocalCluster, ray_namespace: str, newer_ray: str
) -> None:
    ns, name = ray_namespace, "embedded"
    claim = f"{name}-gcs-pvc"
    started = time.monotonic()
    server_side_apply(real_cluster, ns, embedded_cluster(name, newer_ray))
    wait_for(
        "the head and the worker Ready by their probes",
        lambda: all_ready(pods(real_cluster, ns, f"ray.io/cluster={name}"), 2),
        timeout=RAY_READY_SECONDS, interval=2.0, explain=lambda: pod_states(real_cluster, ns),
    )  # fmt: skip
    ready_after = time.monotonic() - started
    raw = real_cluster.get_json("-n", ns, "raycluster", name)
    assert FINALIZER not in raw["metadata"].get("finalizers", []), raw["metadata"]
    pvc = real_cluster.get_json("-n", ns, "pvc", claim)
    assert pvc["status"]["phase"] == "Bound", pvc["status"]
    owners = [(o["kind"], o["name"]) for o in pvc["metadata"].get("ownerReferences", [])]
    assert owners == [("RayCluster", name)], owners

    before = count_twice(real_cluster, ns, name)
    head_env = {e["name"]: e.get("value") for e in before.head["spec"]["containers"][0]["env"]}
    assert head_env.get("RAY_gcs_storage") == "rocksdb", head_env
    # The GCS wrote its tables to the volume (Ray 2.60's RocksDB files under the path).
    listing = real_cluster.kubectl("-n", ns, "exec", before.head["metadata"]["name"], "-c",
                                   "ray-head", "--", "ls", "-A", "/data/gcs").stdout  # fmt: skip
    assert listing.split(), "the GCS wrote nothing to /data/gcs"

    loss = lose_the_head(real_cluster, ns, name, before)
    print(f"\nours, embedded GCS storage ({pvc['spec']['storageClassName']} volume, Ray "
          f"{NEWER.version}): cluster Ready {ready_after:.1f} s; {loss.describe(before)}; "
          f"/data/gcs held {sorted(listing.split())}")  # fmt: skip

    deleting = time.monotonic()
    real_cluster.kubectl("-n", ns, "delete", "raycluster", name, "--wait=false")
    wait_for(
        "the RayCluster and its claim gone",
        lambda: gone(real_cluster, ns, RAY_CLUSTER, name)
        and gone(real_cluster, ns, PERSISTENT_VOLUME_CLAIM, claim),
        timeout=DELETION_SECONDS, interval=1.0, explain=lambda: pod_states(real_cluster, ns),
    )  # fmt: skip
    print(f"ours, embedded GCS storage: the cluster and its claim gone "
          f"{time.monotonic() - deleting:.1f} s after the delete")  # fmt: skip
