"""The nodes of a local control plane, from two providers behind one interface
(``NodeProvider``, as kind's providers are the one shape of its node back ends):

- ``KwokNodes``: plain Node objects that kwok keeps Ready and whose pods it "runs"
  without containers. Capacities are generous enough for scale tests (1,000 pods a node)
  and two nodes carry ``nvidia.com/gpu`` so GPU worker groups schedule as they would on a
  real cluster.
- ``hack.node.RealNode``: one kubelet with containerd, whose pods run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

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


class NodeProvider(Protocol):
    """What a control plane asks of its nodes, in its own order."""

    def create(self) -> None:
        """Before the control plane starts (a real node's network must exist first)."""

    def start(self, cluster: LocalCluster) -> None:
        """Once the API server answers: register the nodes."""

    def ready(self, cluster: LocalCluster) -> bool:
        """Whether every node of this provider is Ready."""

    def stop(self) -> list[str]:
        """Before the control plane stops; what was left behind (empty when all went well)."""


@dataclass(frozen=True)
class KwokNodes:
    """``count`` fake nodes for kwok; the last ``gpu_nodes`` of them have GPUs."""

    count: int
    gpu_nodes: int = 2
    prefix: str = "kwok-node"

    def create(self) -> None:
        pass  # Node objects need the API server

    def start(self, cluster: LocalCluster) -> None:
        if self.count:
            create(cluster, count=self.count, gpu_nodes=self.gpu_nodes, prefix=self.prefix)

    def ready(self, cluster: LocalCluster) -> bool:
        return all_ready(cluster)

    def stop(self) -> list[str]:
        return []  # the objects go with etcd's data; kwok is a control-plane component


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
