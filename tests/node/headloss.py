"""A head lost under a Ray cluster with GCS fault tolerance, and what must outlive it:
shared by the Redis scenarios (``test_gcs_ft_on_the_node.py``) and the GCS's own storage
on a volume (``test_gcs_embedded_storage_on_the_node.py``).

The head offers no CPU, so a detached actor lives on the worker. It counts twice; the
head pod is deleted; a new head comes up from the GCS's storage, the worker pod is the
same pod and its container never restarted (its raylet waits out the GCS's absence:
``RAY_gcs_rpc_server_reconnect_timeout_s``), and the actor answers with its count intact.
"""

from __future__ import annotations

import textwrap
import time
from dataclasses import dataclass
from typing import Any

from hack.localcluster import LocalCluster
from tests.node.harness import all_ready, pod_states, pods
from tests.waiting import wait_for

RECOVERY_SECONDS = 420.0
"""From the head's deletion to the actor answering: the old head stops, a new one
starts and its GCS reloads the tables from storage, the worker's raylet reconnects."""
EXEC_SECONDS = 300
"""A program run in a head (``ray.init()`` and one call): a loaded machine's Ray takes
minutes to connect a new driver (120 s ran out in CI)."""

COUNT = textwrap.dedent("""
    import ray
    ray.init(namespace="gcsft")
    try:
        counter = ray.get_actor("counter")
    except ValueError:
        @ray.remote
        class Counter:
            def __init__(self):
                self.count = 0
            def incr(self):
                self.count += 1
                return self.count, ray.get_runtime_context().get_node_id()
        counter = Counter.options(name="counter", lifetime="detached").remote()
    count, node = ray.get(counter.incr.remote(), timeout=60)
    print("counted", count, "on", node)
""")
"""Create the detached actor if it is not there, and count once; prints the count and
the Ray node the actor lives on."""
NODE_ID = "import ray; ray.init(); print('node', ray.get_runtime_context().get_node_id())"


def head_pod(cluster: LocalCluster, namespace: str, name: str) -> dict[str, Any]:
    (head,) = pods(cluster, namespace, f"ray.io/cluster={name},ray.io/node-type=head")
    return head


def in_head(cluster: LocalCluster, namespace: str, head: str, program: str,
            timeout: float = EXEC_SECONDS) -> str:  # fmt: skip
    return cluster.kubectl("-n", namespace, "exec", head, "-c", "ray-head", "--", "python",
                           "-c", program, timeout=timeout).stdout  # fmt: skip


def counted(output: str) -> tuple[int, str]:
    """``counted N on NODE`` from ``COUNT``'s output."""
    line = next(ln for ln in output.splitlines() if ln.startswith("counted "))
    _, count, _, node = line.split()
    return int(count), node


def worker_identity(pod: dict[str, Any]) -> tuple[str, str, list[int]]:
    statuses = pod.get("status", {}).get("containerStatuses", [])
    return (pod["metadata"]["name"], pod["metadata"]["uid"],
            [c.get("restartCount", 0) for c in statuses])  # fmt: skip


@dataclass(frozen=True)
class Counting:
    """The cluster before its head is lost: the actor has counted twice."""

    head: dict[str, Any]
    head_node: str
    worker: tuple[str, str, list[int]]
    counts: tuple[tuple[int, str], tuple[int, str]]


def count_twice(cluster: LocalCluster, namespace: str, name: str) -> Counting:
    """The detached actor made and counting to 2 on the worker (the head offers no CPU)."""
    head = head_pod(cluster, namespace, name)
    (worker,) = pods(cluster, namespace, f"ray.io/cluster={name},ray.io/node-type=worker")
    head_node = in_head(cluster, namespace, head["metadata"]["name"], NODE_ID)
    first = counted(in_head(cluster, namespace, head["metadata"]["name"], COUNT))
    second = counted(in_head(cluster, namespace, head["metadata"]["name"], COUNT))
    assert (first[0], second[0]) == (1, 2), (first, second)
    # The head offers no CPU: the actor lives on the worker, whose raylet outlives the head.
    assert second[1] == first[1] and first[1] not in head_node, (first, head_node)
    return Counting(head, head_node, worker_identity(worker), (first, second))


@dataclass(frozen=True)
class HeadLoss:
    """What the loss of the head cost: seconds from its deletion."""

    head_ready_after: float
    answered_after: float
    count: tuple[int, str]
    worker: tuple[str, str, list[int]]

    def describe(self, before: Counting) -> str:
        (first, _), (second, _) = before.counts
        return (f"head deleted -> new head Ready {self.head_ready_after:.1f} s, actor "
                f"answers {self.answered_after:.1f} s; count {first}, {second} -> "
                f"{self.count[0]} (actor on node {self.count[1][:12]}); worker before "
                f"{before.worker}, after {self.worker}")  # fmt: skip


def lose_the_head(cluster: LocalCluster, namespace: str, name: str, before: Counting) -> HeadLoss:
    """Delete the head pod; a new head Ready and the actor answering through it, the
    worker pod untouched and the actor's count intact (asserted)."""
    old_uid = before.head["metadata"]["uid"]
    deleted = time.monotonic()
    cluster.kubectl("-n", namespace, "delete", "pod", before.head["metadata"]["name"],
                    "--wait=false")  # fmt: skip

    def new_head_ready() -> dict[str, Any] | None:
        heads = pods(cluster, namespace, f"ray.io/cluster={name},ray.io/node-type=head")
        fresh = [h for h in heads if h["metadata"]["uid"] != old_uid]
        return fresh[0] if len(heads) == 1 and fresh and all_ready(fresh, 1) else None

    new_head = wait_for("a new head Ready", new_head_ready, timeout=RECOVERY_SECONDS,
                        interval=1.0, explain=lambda: pod_states(cluster, namespace))  # fmt: skip
    head_ready_after = time.monotonic() - deleted
    answers: list[str] = []

    def actor_answers() -> tuple[int, str] | None:
        ran = cluster.kubectl("-n", namespace, "exec", new_head["metadata"]["name"], "-c",
                              "ray-head", "--", "python", "-c", COUNT, timeout=120,
                              check=False)  # fmt: skip
        answers[:] = [(ran.stdout + ran.stderr)[-1500:]]
        return counted(ran.stdout) if "counted " in ran.stdout else None

    third = wait_for("the detached actor to answer through the new head", actor_answers,
                     timeout=RECOVERY_SECONDS, interval=2.0, explain=lambda: answers)  # fmt: skip
    answered_after = time.monotonic() - deleted
    (worker_now,) = pods(cluster, namespace, f"ray.io/cluster={name},ray.io/node-type=worker")
    loss = HeadLoss(head_ready_after, answered_after, third, worker_identity(worker_now))
    assert loss.worker == before.worker, (before.worker, loss.worker)
    # The actor's process on the worker outlived the GCS: its state is intact.
    first = before.counts[0]
    assert third == (3, first[1]), (first, third)
    return loss
