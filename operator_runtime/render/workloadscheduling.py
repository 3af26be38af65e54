"""Kubernetes workload-aware scheduling (the ``KubernetesWAS`` gate): pure, no I/O.

With the gate on, KubeRay v1.7.0 gangs a RayCluster with the API server's own
``scheduling.k8s.io/v1alpha2`` objects instead of a second scheduler's: a Workload
named as the cluster, holding one PodGroupTemplate (``cluster``) whose gang policy asks
for the head plus every desired worker at once, and a PodGroup ``<cluster>-cluster``
made from that template. Every Ray pod names the PodGroup in ``spec.schedulingGroup``
and keeps the default scheduler, whose GangScheduling plugin binds all of them or none.

It is opt-in per cluster (``ray.io/gang-scheduling-enabled: true``, any case), and a
cluster with the in-tree autoscaler is left alone: a gang of a fixed size would fight
the autoscaler. Both objects are immutable, so a changed gang size is a replacement;
which existing object is out of date is decided here (``workload_stale``,
``pod_group_stale``), the writes are ``controllers/workloadscheduling.py``'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from operator_runtime.api import JSONObject, RayCluster
from operator_runtime.api.labels import LabelKey
from operator_runtime.render._json import child
from operator_runtime.render.metadata import owner_reference
from operator_runtime.render.names import namespace_of
from operator_runtime.render.resources import desired_replicas

KUBERNETES_WAS: Final = "kubernetes-was-v1alpha2"
"""The scheduler's name in ``RenderOptions.batch_scheduler`` (KubeRay's plugin name): the
gate alone selects it, never ``--batch-scheduler``."""
GATE: Final = "KubernetesWAS"
API_VERSION: Final = "scheduling.k8s.io/v1alpha2"
TEMPLATE_NAME: Final = "cluster"
"""The one PodGroupTemplate: head and every worker group are one gang."""
POD_GROUP_PROTECTION_FINALIZER: Final = "scheduling.k8s.io/podgroup-protection"
"""Kubernetes' finalizer on a PodGroup while pods name it; we strip it before deleting
our own PodGroup, whose pods may outlive it (a replacement, a cleanup)."""
DEFAULT_SCHEDULER_NAME: Final = "default-scheduler"
SKIP_NOT_ENABLED: Final = "gang scheduling not enabled on RayCluster"
SKIP_AUTOSCALING: Final = "autoscaling is not yet supported"


def skip_reason(cluster: RayCluster) -> str:
    """Why ``cluster`` gets no gang ("" when it gets one): not opted in, or autoscaled."""
    value = (cluster.metadata.labels or {}).get(LabelKey.GANG_SCHEDULING_ENABLED, "")
    if value.lower() != "true":
        return SKIP_NOT_ENABLED
    if cluster.spec.enable_in_tree_autoscaling:
        return SKIP_AUTOSCALING
    return ""


def pod_group_name(cluster_name: str) -> str:
    return f"{cluster_name}-{TEMPLATE_NAME}"


def min_count(cluster: RayCluster) -> int:
    """The head plus every desired worker (clamped, times hosts; suspended groups 0)."""
    return 1 + desired_replicas(cluster)


def _scheduling_policy(cluster: RayCluster) -> JSONObject:
    return {"gang": {"minCount": min_count(cluster)}}


def _metadata(cluster: RayCluster, name: str) -> JSONObject:
    return {
        "name": name,
        "namespace": namespace_of(cluster),
        "labels": {LabelKey.CLUSTER.value: cluster.metadata.name or ""},
        "ownerReferences": [owner_reference(cluster)],
    }


def build_workload(cluster: RayCluster) -> JSONObject:
    """The Workload ``<cluster>``: controlled by the cluster (for the garbage collector),
    with ``spec.controllerRef`` naming it too (for tools that read the Workload)."""
    name = cluster.metadata.name or ""
    return {
        "apiVersion": API_VERSION,
        "kind": "Workload",
        "metadata": _metadata(cluster, name),
        "spec": {
            "controllerRef": {"apiGroup": "ray.io", "kind": cluster.kind, "name": name},
            "podGroupTemplates": [
                {"name": TEMPLATE_NAME, "schedulingPolicy": _scheduling_policy(cluster)}
            ],
        },
    }


def build_pod_group(cluster: RayCluster) -> JSONObject:
    """The PodGroup ``<cluster>-cluster``, made from the Workload's template (same policy)."""
    name = cluster.metadata.name or ""
    return {
        "apiVersion": API_VERSION,
        "kind": "PodGroup",
        "metadata": _metadata(cluster, pod_group_name(name)),
        "spec": {
            "podGroupTemplateRef": {
                "workload": {"workloadName": name, "podGroupTemplateName": TEMPLATE_NAME}
            },
            "schedulingPolicy": _scheduling_policy(cluster),
        },
    }


def scheduling_objects(cluster: RayCluster) -> list[JSONObject]:
    """The Workload, then its PodGroup (the order they are made in); none when skipped."""
    if skip_reason(cluster):
        return []
    return [build_workload(cluster), build_pod_group(cluster)]


def add_pod_fields(cluster: RayCluster, pod_like: JSONObject) -> None:
    """Stamp a Ray pod (or pod template) of ``cluster``, in place: the default scheduler
    and the cluster's PodGroup. A skipped cluster's pods are left exactly as rendered."""
    if skip_reason(cluster):
        return
    spec = child(pod_like, "spec")
    spec["schedulerName"] = DEFAULT_SCHEDULER_NAME
    spec["schedulingGroup"] = {"podGroupName": pod_group_name(cluster.metadata.name or "")}


def _gang_min_count(policy: object) -> int | None:
    gang = policy.get("gang") if isinstance(policy, Mapping) else None
    count = gang.get("minCount") if isinstance(gang, Mapping) else None
    return count if isinstance(count, int) else None


def workload_stale(existing: Mapping[str, object], desired: JSONObject) -> bool:
    """Whether the Workload found must be replaced: not exactly one template, another
    template name, no gang, or another ``minCount``. Worker groups renamed with the same
    total are the same gang."""
    spec = existing.get("spec")
    templates = spec.get("podGroupTemplates") if isinstance(spec, Mapping) else None
    if not isinstance(templates, list) or len(templates) != 1:
        return True
    found, wanted = templates[0], _only_template(desired)
    if not isinstance(found, Mapping) or found.get("name") != wanted.get("name"):
        return True
    count = _gang_min_count(found.get("schedulingPolicy"))
    return count is None or count != _gang_min_count(wanted.get("schedulingPolicy"))


def _only_template(workload: JSONObject) -> Mapping[str, object]:
    templates = child(workload, "spec").get("podGroupTemplates")
    assert isinstance(templates, list) and isinstance(templates[0], dict)
    return templates[0]


def pod_group_stale(existing: Mapping[str, object], desired: JSONObject) -> bool:
    """Whether the PodGroup found must be replaced: no gang, or another ``minCount``."""
    spec = existing.get("spec")
    count = _gang_min_count(spec.get("schedulingPolicy") if isinstance(spec, Mapping) else None)
    return count is None or count != _gang_min_count(child(desired, "spec")["schedulingPolicy"])
