"""``ray status`` in a Ray pod, read for the number of alive Ray nodes: how the real-node
tests and ``make demo`` tell that every worker has joined the head, whatever its pod's
readiness says.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hack.localcluster import LocalCluster

__all__ = ["RayStatus", "alive_in_ray_status", "ray_status"]


def alive_in_ray_status(status: str) -> int:
    """The alive nodes ``ray status`` lists: its Active and Idle sections count them by
    node type (``" 2 cpu"``), or list them one per line by id (``" node_..."``)."""
    alive = status.split("Active:", 1)[-1].split("Pending:", 1)[0]
    counted = re.findall(r"^\s+(\d+) \S+$", alive, flags=re.MULTILINE)
    return sum(map(int, counted)) + sum(1 for line in alive.splitlines() if "node_" in line)


@dataclass(frozen=True)
class RayStatus:
    output: str
    """What ``ray status`` printed: its report, or why there was none (its stderr)."""
    alive: int


def ray_status(cluster: LocalCluster, namespace: str, pod: str, container: str) -> RayStatus:
    """``kubectl exec POD -c CONTAINER -- ray status``. A failed run (the head's GCS not up
    yet) counts no node and keeps what it said, for a wait's explanation."""
    ran = cluster.kubectl("-n", namespace, "exec", pod, "-c", container, "--",
                          "ray", "status", check=False)  # fmt: skip
    if ran.returncode != 0:
        return RayStatus(f"{ran.stdout[-2000:]}{ran.stderr[-2000:]}", 0)
    return RayStatus(ran.stdout, alive_in_ray_status(ran.stdout))
