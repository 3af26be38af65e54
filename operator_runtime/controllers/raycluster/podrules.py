"""Pure rules about pods, unit-tested row by row: pods.py decides by them, podwrites.py writes.

Should a pod be replaced, is it running and ready, does it still count. No cache, client
or clock: KubeRay's behaviour hinges on these rules (which pods are deleted and
recreated), so they stand alone where a test can hold each row.
"""

from __future__ import annotations

import datetime
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Final

from operator_runtime.api.labels import LabelKey
from operator_runtime.controllers.pods import pod_ready
from operator_runtime.runtime.clock import later, parse_time
from operator_runtime.runtime.kinds import Object, being_deleted

INDEX_HOLD_SLACK_SECONDS: Final = 10.0
"""How long past its deletion deadline a Terminating pod still holds its replica index.
The kubelet kills a pod at that deadline and reports it gone within seconds; one still
listed this long after sits on a node that no longer answers, and its place is taken
under another index. So the slack never lets two pods share an index: it only decides
how long a lost node's pod delays its replacement."""


@dataclass(frozen=True, slots=True)
class Verdict:
    delete: bool
    reason: str


def _phase(pod: Object) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def ray_container_terminated(pod: Object) -> Object | None:
    """The Ray container's ``state.terminated``. Statuses are matched by name: their
    order is not the order of ``spec.containers``."""
    containers = (pod.get("spec") or {}).get("containers") or ()
    if not containers:
        return None
    ray_name = containers[0].get("name")
    for status in (pod.get("status") or {}).get("containerStatuses") or ():
        if status.get("name") == ray_name:
            terminated = (status.get("state") or {}).get("terminated")
            return terminated if isinstance(terminated, dict) else None
    return None


def should_delete_pod(pod: Object, node_type: str) -> Verdict:
    """Replace a pod that can never run Ray again: a terminal phase, or a Running pod
    whose Ray container exited and will not be restarted (restartPolicy Never).
    A pod the kubelet will restart by itself is left alone."""
    name = (pod.get("metadata") or {}).get("name", "")
    phase = _phase(pod)
    if phase in ("Failed", "Succeeded"):
        return Verdict(True, f"the {node_type} pod {name} is {phase}, a terminal phase")
    terminated = ray_container_terminated(pod)
    if phase == "Running" and terminated is not None:
        policy = str((pod.get("spec") or {}).get("restartPolicy") or "")
        if policy == "Never":
            return Verdict(
                True,
                f"the Ray container of the {node_type} pod {name} terminated "
                f"({terminated.get('reason', '')}) and restartPolicy Never cannot restart it",
            )
        return Verdict(
            False,
            f"the Ray container of {name} terminated; restartPolicy {policy or 'Always'} "
            "restarts it",
        )
    return Verdict(False, f"the {node_type} pod {name} is {phase or 'not started'}")


def running_and_ready(pod: Object) -> bool:
    return _phase(pod) == "Running" and pod_ready(pod)


def all_running_and_ready(pods: Iterable[Object]) -> bool:
    """KubeRay's check: at least one pod, all Running, none with Ready other than True
    (a pod without a Ready condition yet does not count against it)."""
    seen = False
    for pod in pods:
        seen = True
        if _phase(pod) != "Running":
            return False
        for condition in (pod.get("status") or {}).get("conditions") or ():
            if condition.get("type") == "Ready" and condition.get("status") != "True":
                return False
    return seen


def live_pods(pods: Iterable[Object]) -> list[Object]:
    """The pods that count as the head, a worker replica or a host of one: all but those
    Terminating. A pod with a ``deletionTimestamp`` is on its way out, as the ReplicaSet
    controller treats it, so one stuck Terminating on a lost node is replaced instead of
    holding its place for good. A pod we delete ourselves is covered by its delete
    expectation until the cache shows it Terminating (``podwrites.satisfied``)."""
    return [pod for pod in pods if not being_deleted(pod)]


def replica_index(pod: Object) -> int | None:
    """The pod's ``ray.io/worker-group-replica-index``; None if it has none (or not a
    number: a label value is at most 63 characters, so any digits convert)."""
    value = (pod["metadata"].get("labels") or {}).get(LabelKey.WORKER_GROUP_REPLICA_INDEX)
    return int(value) if value is not None and str(value).isdigit() else None


def held_replica_indexes(
    pods: Iterable[Object], now: datetime.datetime, *, going: Collection[str] = ()
) -> dict[int, float]:
    """Replica index -> seconds it stays held: the indexes that workers which are
    Terminating (or named in ``going``: deleted by this very pass, which the cache does
    not show yet) still carry, and that no other live pod carries.

    A replica index is an identity (multi-slice groups key their hosts by it), so it is
    never given to a new pod while the old one may still run: the group counts the
    Terminating pod in its place until it is gone, as KubeRay does and as a StatefulSet
    waits for an ordinal. Unlike KubeRay, only until ``INDEX_HOLD_SLACK_SECONDS`` past the
    pod's deletion deadline: after that the pod is on a lost node, and a replacement
    (under another index) is made instead of the group staying one short for good."""
    live: set[int] = set()
    held: dict[int, float] = {}
    for pod in pods:
        index = replica_index(pod)
        if index is None:
            continue
        if pod["metadata"]["name"] in going:
            left = INDEX_HOLD_SLACK_SECONDS  # its deadline is not known yet
        elif not being_deleted(pod):
            live.add(index)
            continue
        else:
            deadline = parse_time(pod["metadata"]["deletionTimestamp"])
            assert deadline is not None  # being_deleted: the timestamp is set
            left = (later(deadline, INDEX_HOLD_SLACK_SECONDS) - now).total_seconds()
        if left > 0:
            held[index] = max(left, held.get(index, 0.0))
    return {index: left for index, left in held.items() if index not in live}
