"""Fake nodes for kwok: plain Node objects that kwok keeps Ready and whose pods it runs.

Capacities are generous enough for scale tests (1,000 pods a node) and two nodes carry
``nvidia.com/gpu`` so GPU worker groups schedule as they would on a real cluster.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hack.localcluster.cluster import LocalCluster

MANAGED_ANNOTATION = "kwok.x-k8s.io/node"
"""kwok manages the nodes carrying this annotation with the value ``fake``."""

CPU_PER_NODE = "32"
MEMORY_PER_NODE = "256Gi"
PODS_PER_NODE = "1000"
GPUS_PER_GPU_NODE = "8"


def node_manifest(name: str, *, gpus: bool) -> dict[str, object]:
    """A Node that kwok will adopt; ``gpus`` adds ``nvidia.com/gpu`` capacity."""
    capacity = {"cpu": CPU_PER_NODE, "memory": MEMORY_PER_NODE, "pods": PODS_PER_NODE}
    if gpus:
        capacity["nvidia.com/gpu"] = GPUS_PER_GPU_NODE
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {MANAGED_ANNOTATION: "fake"},
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kwok",
                **({"nvidia.com/gpu.present": "true"} if gpus else {}),
            },
        },
        "spec": {},
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def create(
    cluster: LocalCluster, *, count: int, gpu_nodes: int = 2, prefix: str = "kwok-node"
) -> None:
    """Create ``count`` fake nodes; the last ``gpu_nodes`` of them have GPUs."""
    manifests = [
        node_manifest(f"{prefix}-{index}", gpus=index >= count - gpu_nodes)
        for index in range(count)
    ]
    cluster.kubectl(
        "apply",
        "-f",
        "-",
        input=json.dumps({"apiVersion": "v1", "kind": "List", "items": manifests}),
    )


def all_ready(cluster: LocalCluster) -> bool:
    """Whether there is at least one node and every node reports Ready."""
    listing = json.loads(cluster.kubectl("get", "nodes", "-o", "json", check=False).stdout or "{}")
    items = listing.get("items", [])
    return bool(items) and all(
        any(
            condition.get("type") == "Ready" and condition.get("status") == "True"
            for condition in node.get("status", {}).get("conditions", [])
        )
        for node in items
    )
