"""The RayCluster a RayService runs Serve on, and the spec hash that decides its fate.

KubeRay (constructRayClusterForRayService) gives the cluster the RayService's labels and
annotations, a copy of ``rayClusterConfig`` and the RayService as its controller, plus
three annotations the controller reads back on every pass: the spec hash, the number
of worker groups the cluster was made with and the KubeRay version that made it.

The hash (GenerateHashWithoutReplicasAndWorkersToDelete) leaves out what must not cause
a new cluster: replica counts and ``workersToDelete`` (the autoscaler changes them),
tolerations and scheduling gates (Kueue adds them), the cluster ``upgradeStrategy`` and,
for a RayService, ``suspend`` (handed to the cluster only when it is created). Only
self-consistency matters, because the operator only ever compares hashes it computed
itself: the spec's wire form goes through one canonical JSON dump, not Go's encoder.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from typing import Final

from operator_runtime.api import (
    FeatureGates,
    JSONObject,
    JSONValue,
    RayCluster,
    RayClusterSpec,
    RayService,
)
from operator_runtime.api.annotations import AnnotationKey
from operator_runtime.api.labels import LabelKey
from operator_runtime.api.rayservice import INCREMENTAL_UPGRADE
from operator_runtime.render._json import child, objects, sorted_map
from operator_runtime.render.metadata import owner_reference
from operator_runtime.render.names import namespace_of
from operator_runtime.render.options import RenderOptions

_POD_SPEC_IGNORED: Final = ("tolerations", "schedulingGates")
_GROUP_IGNORED: Final = ("replicas", "minReplicas", "maxReplicas")
_GO_ATOI: Final = re.compile(r"[+-]?[0-9]+")


def incremental_upgrade_enabled(service: RayService, gates: FeatureGates) -> bool:
    """KubeRay's IsIncrementalUpgradeEnabled: the RayServiceIncrementalUpgrade gate is on
    and ``upgradeStrategy.type`` is NewClusterWithIncrementalUpgrade."""
    strategy = service.spec.upgrade_strategy
    return (
        gates.ray_service_incremental_upgrade
        and strategy is not None
        and strategy.type == INCREMENTAL_UPGRADE
    )


def _without_empty(value: JSONValue) -> JSONValue:
    """Empty maps and lists (and nulls) left out as map values, recursively: Go's
    ``omitempty`` writes ``{}``/``[]``/absent alike for most fields, so they hash alike."""
    if isinstance(value, dict):
        kept: JSONObject = {}
        for key, item in value.items():
            cleaned = _without_empty(item)
            if cleaned is None or cleaned == {} or cleaned == []:
                continue
            kept[key] = cleaned
        return kept
    if isinstance(value, list):
        return [_without_empty(item) for item in value]
    return value


def _drop_pod_fields(group: JSONObject) -> None:
    pod_spec = child(child(group, "template"), "spec")
    for key in _POD_SPEC_IGNORED:
        pod_spec.pop(key, None)


def cluster_spec_hash(spec: RayClusterSpec, *, for_rayservice: bool = True) -> str:
    """The ``ray.io/hash-without-replicas-and-workers-to-delete`` value of ``spec``:
    SHA-1 of its canonical JSON without the ignored fields, base32 extended-hex
    (uppercase, 32 characters). ``for_rayservice`` also ignores ``suspend``."""
    wire = spec.to_dict()
    if for_rayservice:
        wire.pop("suspend", None)
    wire.pop("upgradeStrategy", None)
    _drop_pod_fields(child(wire, "headGroupSpec"))
    for group in objects(wire.get("workerGroupSpecs")):
        for key in _GROUP_IGNORED:
            group.pop(key, None)
        child(group, "scaleStrategy").pop("workersToDelete", None)
        _drop_pod_fields(group)
    canonical = json.dumps(
        _without_empty(wire), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    digest = hashlib.sha1(canonical.encode(), usedforsecurity=False).digest()
    return base64.b32hexencode(digest).decode()


def _go_atoi(text: str) -> int | None:
    """``strconv.Atoi`` on a 64-bit platform: optional sign, decimal digits, int64."""
    if _GO_ATOI.fullmatch(text) is None:
        return None
    number = int(text)
    return number if -(2**63) <= number < 2**63 else None


def full_hash_matches(existing_cluster: RayCluster, goal: RayClusterSpec) -> bool:
    """Whether the cluster was made from this very spec (isClusterSpecHashEqual with
    ``partial`` false): its hash annotation equals the goal's hash."""
    annotations = existing_cluster.metadata.annotations or {}
    existing = annotations.get(AnnotationKey.HASH_WITHOUT_REPLICAS_AND_WORKERS_TO_DELETE, "")
    return existing == cluster_spec_hash(goal)


def partial_hash_matches(existing_cluster: RayCluster, goal: RayClusterSpec) -> bool:
    """KubeRay's in-place update test (isClusterSpecHashEqual with ``partial`` true): the
    goal spec cut to the cluster's ``ray.io/num-worker-groups`` groups hashes to the
    cluster's hash annotation, i.e. the only change is worker groups added at the end.

    As in KubeRay: a count that is missing or not an integer counts as a match (the
    cluster is then updated in place), and a goal with fewer groups than the count never
    matches (unless the cluster has no hash annotation either). A negative count, on
    which KubeRay's slice panics, never matches.
    """
    annotations = existing_cluster.metadata.annotations or {}
    existing = annotations.get(AnnotationKey.HASH_WITHOUT_REPLICAS_AND_WORKERS_TO_DELETE, "")
    count = _go_atoi(annotations.get(AnnotationKey.NUM_WORKER_GROUPS, ""))
    if count is None:
        return True
    groups = list(goal.worker_group_specs or ())
    goal_hash = ""
    if count < 0:
        return False
    if len(groups) >= count:
        cut = goal.model_copy(update={"worker_group_specs": groups[:count]})
        goal_hash = cluster_spec_hash(cut)
    return existing == goal_hash


def rayservice_cluster_labels(service: RayService) -> dict[str, str]:
    """The RayService's labels plus where the cluster came from; the controller lists a
    RayService's clusters (dangling ones too) by these two."""
    return {
        **(service.metadata.labels or {}),
        LabelKey.ORIGINATED_FROM_CR_NAME: service.metadata.name or "",
        LabelKey.ORIGINATED_FROM_CRD: "RayService",
    }


def build_rayservice_cluster(
    *,
    service: RayService,
    cluster_name: str,
    options: RenderOptions | None = None,
    incremental_pending: bool = False,
) -> JSONObject:
    """The RayCluster ``cluster_name`` (``<s>-<rand5>``) for ``service``, as plain JSON.

    ``incremental_pending`` is KubeRay's "pending cluster of an incremental upgrade"
    (incremental upgrade on and an active cluster exists): every group's ``replicas`` is
    left unset so the autoscaler sizes it from ``target_capacity`` (the API server's
    CRD default then makes it 0). The hash is always that of the full spec.
    """
    options = options or RenderOptions()
    spec = service.spec.ray_cluster_config
    annotations = {
        **(service.metadata.annotations or {}),
        AnnotationKey.HASH_WITHOUT_REPLICAS_AND_WORKERS_TO_DELETE: cluster_spec_hash(spec),
        AnnotationKey.NUM_WORKER_GROUPS: str(len(spec.worker_group_specs or ())),
        AnnotationKey.KUBERAY_VERSION: options.kuberay_version,
    }
    meta: JSONObject = {
        "name": cluster_name,
        "namespace": namespace_of(service),
        "labels": sorted_map(rayservice_cluster_labels(service)),
        "annotations": sorted_map(annotations),
        "ownerReferences": [owner_reference(service)],
    }
    wire = spec.to_dict()
    if incremental_pending:
        for group in objects(wire.get("workerGroupSpecs")):
            group.pop("replicas", None)
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": meta, "spec": wire}
