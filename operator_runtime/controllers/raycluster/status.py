"""The RayCluster status, computed purely from the cluster, its pods and head Service.

``compute_status`` never talks to the API server; the controller writes its result
only when ``status_changed`` (``controllers/clusterstatus.py``) says something a reader
cares about moved, so a steady cluster costs no writes. Rules (KubeRay's):

- ``state`` is sticky: ``ready`` once all desired pods (workers + head) run and are
  ready with no step error, ``suspended`` once a suspended cluster has no pods; nothing
  else ever clears it.
- ``RayClusterProvisioned`` turns True the first time all pods are running and ready
  and then stays, unless the cluster is suspended (then it is reset to False).
- ``HeadPodReady`` mirrors the head pod's Ready condition.
- ``RayClusterSuspending``/``RayClusterSuspended`` move suspend along:
  spec.suspend -> Suspending -> (no pods left) Suspended -> (spec.suspend false) resumed.
- ``ReplicaFailure`` is True with the failed pod operation while one fails.
"""

from __future__ import annotations

import copy
import datetime
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from operator_runtime.api import RayCluster
from operator_runtime.api.common import INT32_MAX
from operator_runtime.api.labels import LabelKey, NodeType
from operator_runtime.api.raycluster import (
    HEAD_POD_READY,
    PROVISIONED,
    REPLICA_FAILURE,
    STATE_READY,
    STATE_SUSPENDED,
    SUSPENDED,
    SUSPENDING,
)
from operator_runtime.controllers.conditions import is_true, set_condition
from operator_runtime.controllers.raycluster import podrules
from operator_runtime.controllers.raycluster.podwrites import ReplicaFailureError
from operator_runtime.render import desired_worker_replicas
from operator_runtime.render.resources import desired_resources
from operator_runtime.runtime.clock import format_time
from operator_runtime.runtime.errors import TemporaryError
from operator_runtime.runtime.kinds import Object


class StatusError(TemporaryError):
    """The status cannot be computed yet (e.g. the head Service is missing): retried with
    the key's backoff and logged as a retry, not as an unexpected exception's traceback."""


@dataclass(frozen=True, slots=True)
class StatusInputs:
    cluster: RayCluster
    old_status: Object
    generation: int
    pods: Sequence[Object]
    """Head and worker pods of the cluster."""
    head_services: Sequence[Object]
    """Services labelled as this cluster's head Service (exactly one is expected)."""
    step_error: BaseException | None
    conditions_gate: bool
    now: datetime.datetime


def suspend_status(conditions: Sequence[Object]) -> str:
    """``RayClusterSuspending``, ``RayClusterSuspended`` or "" (whichever is True)."""
    for condition in conditions:
        if condition.get("type") in (SUSPENDING, SUSPENDED) and condition.get("status") == "True":
            return str(condition["type"])
    return ""


def head_pod_ready_condition(head: Object) -> tuple[str, str, str]:
    """(status, reason, message) of HeadPodReady from the head pod's Ready condition."""
    status, reason, message = "False", "Unknown", ""
    for condition in (head.get("status") or {}).get("conditions") or ():
        if condition.get("type") != "Ready":
            continue
        status = str(condition.get("status") or "False")
        message = str(condition.get("message") or "")
        pod_reason = str(condition.get("reason") or "")
        if status == "True" and not pod_reason:
            pod_reason = "HeadPodRunningAndReady"
        reason = pod_reason or reason
        if pod_reason == "ContainersNotReady":
            detail = _first_unready_container(head)
            if detail is not None:
                reason = detail[0]
                message = f"{message}; {detail[1]}" if message else detail[1]
        break
    return status, reason, message


def _first_unready_container(pod: Object) -> tuple[str, str] | None:
    for status in (pod.get("status") or {}).get("containerStatuses") or ():
        state = status.get("state") or {}
        for key in ("waiting", "terminated"):
            if state.get(key) is not None:
                detail = state[key]
                return str(
                    detail.get("reason", "")
                ), f"{status.get('name')}: {detail.get('message', '')}"
        # a running container says nothing about why the pod is not ready
    return None


def _counts(cluster: RayCluster, pods: Sequence[Object]) -> dict[str, int]:
    workers = [p for p in pods if _node_type(p) == NodeType.WORKER]
    groups = cluster.spec.worker_group_specs or ()
    active = [g for g in groups if not g.suspend]
    maximum = sum(
        (g.max_replicas if g.max_replicas is not None else INT32_MAX) * g.num_of_hosts
        for g in active
    )
    return {
        "readyWorkerReplicas": sum(1 for p in workers if podrules.running_and_ready(p)),
        "availableWorkerReplicas": sum(
            1 for p in workers if (p.get("status") or {}).get("phase") == "Running"
        ),
        "desiredWorkerReplicas": sum(desired_worker_replicas(g) * g.num_of_hosts for g in groups),
        "minWorkerReplicas": sum((g.min_replicas or 0) * g.num_of_hosts for g in active),
        "maxWorkerReplicas": min(maximum, INT32_MAX),
    }


def _node_type(pod: Object) -> str:
    return str(((pod.get("metadata") or {}).get("labels") or {}).get(LabelKey.NODE_TYPE, ""))


def compute_status(inputs: StatusInputs) -> Object:
    """The new status (a fresh dict; ``inputs.old_status`` is not modified)."""
    status: dict[str, Any] = copy.deepcopy(dict(inputs.old_status))
    now = format_time(inputs.now)
    conditions: list[Object] = list(status.get("conditions") or [])
    error = inputs.step_error
    if inputs.conditions_gate:
        if isinstance(error, ReplicaFailureError):
            set_condition(conditions, REPLICA_FAILURE, "True", error.reason.value, str(error), now)
        elif error is None:
            conditions = [c for c in conditions if c.get("type") != REPLICA_FAILURE]
    status["observedGeneration"] = inputs.generation
    status.update(_counts(inputs.cluster, inputs.pods))
    status.update(desired_resources(inputs.cluster))
    pods = inputs.pods
    complete = error is None and len(pods) == status["desiredWorkerReplicas"] + 1
    if complete and podrules.all_running_and_ready(pods):
        status["state"] = STATE_READY
        status.pop("reason", None)
    # A head pod still Terminating next to its replacement is not the head (``live_pods``).
    heads = [p for p in podrules.live_pods(pods) if _node_type(p) == NodeType.HEAD]
    if inputs.conditions_gate:
        _head_condition(conditions, heads, now)
        _provisioning_conditions(conditions, inputs, now)
    if inputs.cluster.spec.suspend and not pods:
        status["state"] = STATE_SUSPENDED
    if conditions:
        status["conditions"] = conditions
    else:
        status.pop("conditions", None)
    status["endpoints"] = _endpoints(inputs.head_services)
    status["head"] = _head_info(heads, inputs.head_services)
    status["lastUpdateTime"] = now
    if status.get("state") != inputs.old_status.get("state") and status.get("state"):
        times = dict(status.get("stateTransitionTimes") or {})
        times[str(status["state"])] = now
        status["stateTransitionTimes"] = times
    return status


def _head_condition(conditions: list[Object], heads: Sequence[Object], now: str) -> None:
    if len(heads) > 1:
        raise StatusError(f"{len(heads)} head pods found; delete the extra ones")
    if not heads:
        set_condition(
            conditions, HEAD_POD_READY, "False", "HeadPodNotFound", "Head Pod not found", now
        )
        return
    set_condition(conditions, HEAD_POD_READY, *head_pod_ready_condition(heads[0]), now)


def _provisioning_conditions(conditions: list[Object], inputs: StatusInputs, now: str) -> None:
    suspend = suspend_status(conditions)
    pods = inputs.pods
    if not is_true(conditions, PROVISIONED) and suspend != SUSPENDED:
        if podrules.all_running_and_ready(pods):
            set_condition(
                conditions,
                PROVISIONED,
                "True",
                "AllPodRunningAndReadyFirstTime",
                "All Ray Pods are ready for the first time",
                now,
            )
        else:
            set_condition(
                conditions,
                PROVISIONED,
                "False",
                "RayClusterPodsProvisioning",
                "RayCluster Pods are being provisioned for first time",
                now,
            )
    requested = bool(inputs.cluster.spec.suspend)
    if suspend == SUSPENDING:
        if not pods:
            set_condition(
                conditions,
                PROVISIONED,
                "False",
                "RayClusterPodsProvisioning",
                "RayCluster has been suspended",
                now,
            )
            set_condition(conditions, SUSPENDING, "False", SUSPENDING, "", now)
            set_condition(conditions, SUSPENDED, "True", SUSPENDED, "", now)
    elif suspend == SUSPENDED:
        if inputs.cluster.spec.suspend is False:
            set_condition(conditions, SUSPENDED, "False", SUSPENDED, "", now)
    else:
        set_condition(conditions, SUSPENDED, "False", SUSPENDED, "", now)
        set_condition(conditions, SUSPENDING, "True" if requested else "False", SUSPENDING, "", now)


def _endpoints(services: Sequence[Object]) -> dict[str, str]:
    """Head Service port name -> nodePort, else targetPort (unnamed ports skipped)."""
    endpoints: dict[str, str] = {}
    if not services:
        return endpoints
    for port in (services[0].get("spec") or {}).get("ports") or ():
        name = port.get("name")
        if not name:
            continue
        if port.get("nodePort"):
            endpoints[name] = str(port["nodePort"])
        elif port.get("targetPort") not in (None, 0, ""):
            endpoints[name] = str(port["targetPort"])
    return endpoints


def _head_info(heads: Sequence[Object], services: Sequence[Object]) -> dict[str, str]:
    if not services:
        raise StatusError("the head Service does not exist (yet)")
    if len(services) > 1:
        names = sorted(s["metadata"]["name"] for s in services)
        raise StatusError(f"found several head Services {names}; delete the extra ones")
    service = services[0]
    head_ip = str((heads[0].get("status") or {}).get("podIP") or "") if heads else ""
    cluster_ip = str((service.get("spec") or {}).get("clusterIP") or "")
    if not cluster_ip:
        raise StatusError(f"the head Service {service['metadata']['name']} has no IP yet")
    info = {
        "podIP": head_ip,
        "podName": str(heads[0]["metadata"]["name"]) if heads else "",
        # A headless head Service has no IP of its own: report the pod's.
        "serviceIP": head_ip if cluster_ip == "None" else cluster_ip,
        "serviceName": str(service["metadata"]["name"]),
    }
    return {k: v for k, v in info.items() if v}


def provisioned_now(old: Object, new: Object) -> bool:
    """``RayClusterProvisioned`` turned True in this write."""
    return not is_true(old.get("conditions") or [], PROVISIONED) and is_true(
        new.get("conditions") or [], PROVISIONED
    )
