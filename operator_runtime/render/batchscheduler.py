"""What a batch (gang) scheduler adds to what the operator creates: pure, no I/O.

KubeRay v1.7.0 picks one scheduler at start (``--batch-scheduler``; the deprecated
``--enable-batch-scheduler`` means Volcano) and asks it two things: before a RayCluster's
pods (or in a RayJob's Initializing step) to set up the gang (Volcano's and
scheduler-plugins' PodGroup, written by ``controllers/batchscheduler.py`` from the
manifests built here), and, for every child it creates (pods, the submitter's pod
template, a RayJob's RayCluster), to stamp the metadata that scheduler reads. The
second is ``add_child_metadata``: the renderers call it last, as KubeRay does right
before its create, so a scheduler's keys win over the template's.

What each scheduler reads comes from the parent's own labels: a Volcano queue
(``volcano.sh/queue-name``), a priority class (``ray.io/priority-class-name``), YuniKorn's
application id and queue, KAI's queue, and ``ray.io/gang-scheduling-enabled`` for the
schedulers where a gang is opt-in (scheduler-plugins, YuniKorn).

The ``KubernetesWAS`` feature gate selects one more, the API server's own workload API
(``workloadscheduling.py``): it is dispatched from here like the others, so every
renderer that stamps a child stamps it the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from operator_runtime.api import JSONObject, JSONValue, RayCluster, RayClusterSpec, RayJob
from operator_runtime.api.labels import HEAD_GROUP, LabelKey
from operator_runtime.render._gofmt import go_json
from operator_runtime.render._json import (
    child,
    in_field_order,
    obj,
    objects,
    sorted_map,
    string_map,
)
from operator_runtime.render.containers import default_submitter_template
from operator_runtime.render.metadata import owner_reference
from operator_runtime.render.names import namespace_of
from operator_runtime.render.resources import (
    Amount,
    desired_replicas,
    format_quantity,
    min_replicas,
    pod_resources,
    sum_resources,
    worker_resources,
)
from operator_runtime.render.workloadscheduling import (
    KUBERNETES_WAS,
    add_pod_fields,
    scheduling_objects,
)

VOLCANO: Final = "volcano"
YUNIKORN: Final = "yunikorn"
SCHEDULER_PLUGINS: Final = "scheduler-plugins"
KAI_SCHEDULER: Final = "kai-scheduler"
SCHEDULERS: Final = (VOLCANO, YUNIKORN, SCHEDULER_PLUGINS, KAI_SCHEDULER)
"""The names ``--batch-scheduler`` accepts, as KubeRay v1.7.0 spells them."""

SCHEDULER_PLUGINS_SCHEDULER_NAME: Final = "scheduler-plugins-scheduler"
"""The ``schedulerName`` KubeRay gives pods under scheduler-plugins: the name of the
second scheduler that project's Helm chart installs, not the plugin's own name."""

PRIORITY_CLASS_LABEL: Final = "ray.io/priority-class-name"
GANG_SCHEDULING_LABEL: Final = LabelKey.GANG_SCHEDULING_ENABLED.value
"""Present (any value, even empty) = gang scheduling wanted (scheduler-plugins, YuniKorn)."""
SUBMITTER_GROUP: Final = "submittergroup"

VOLCANO_QUEUE_LABEL: Final = "volcano.sh/queue-name"
VOLCANO_TOPOLOGY_MODE_LABEL: Final = "volcano.sh/network-topology-mode"
VOLCANO_TOPOLOGY_TIER_LABEL: Final = "volcano.sh/network-topology-highest-tier-allowed"
VOLCANO_GROUP_ANNOTATION: Final = "scheduling.k8s.io/group-name"
VOLCANO_TASK_SPEC_ANNOTATION: Final = "volcano.sh/task-spec"
VOLCANO_POD_GROUP_API: Final = "scheduling.volcano.sh/v1beta1"

PLUGINS_POD_GROUP_LABEL: Final = "scheduling.x-k8s.io/pod-group"
PLUGINS_POD_GROUP_API: Final = "scheduling.x-k8s.io/v1alpha1"

YUNIKORN_APP_ID_LABEL: Final = "yunikorn.apache.org/app-id"
YUNIKORN_QUEUE_LABEL: Final = "yunikorn.apache.org/queue"
YUNIKORN_POD_APP_ID_LABEL: Final = "applicationId"
YUNIKORN_POD_QUEUE_LABEL: Final = "queue"
YUNIKORN_TASK_GROUP_NAME_ANNOTATION: Final = "yunikorn.apache.org/task-group-name"
YUNIKORN_TASK_GROUPS_ANNOTATION: Final = "yunikorn.apache.org/task-groups"

KAI_QUEUE_LABEL: Final = "kai.scheduler/queue"

Parent = RayCluster | RayJob


class BatchSchedulerError(ValueError):
    """What KubeRay's scheduler refuses (a RayJob it cannot gang, a bad label)."""


def chosen_scheduler(
    batch_scheduler: str, enable_batch_scheduler: bool, *, kubernetes_was: bool = False
) -> str:
    """The scheduler KubeRay's manager picks: the ``KubernetesWAS`` gate alone selects
    workload-aware scheduling; else the deprecated boolean means Volcano and wins; ""
    means none (the default scheduler, nothing added). The flags were checked at start
    (``commandline.check_batch_scheduler``: never the gate with either flag)."""
    if kubernetes_was:
        return KUBERNETES_WAS
    if enable_batch_scheduler:
        return VOLCANO
    return batch_scheduler


def _labels(parent: Parent) -> dict[str, str]:
    return dict(parent.metadata.labels or {})


def gang_scheduling_enabled(parent: Parent) -> bool:
    return GANG_SCHEDULING_LABEL in _labels(parent)


def _copy_label(parent: Parent, labels: dict[str, str], source: str, target: str) -> None:
    value = _labels(parent).get(source)
    if value:
        labels[target] = value


def _is_pod_like(kind: str) -> bool:
    return kind in ("Pod", "PodTemplateSpec")


def add_child_metadata(
    scheduler: str, *, parent: Parent, child_object: JSONObject, kind: str, group_name: str
) -> None:
    """Stamp ``child_object`` (a ``kind`` of Pod, PodTemplateSpec or RayCluster, as JSON)
    with what ``scheduler`` reads, in place. ``group_name`` is the pod's group
    (``headgroup``, a worker group, ``submittergroup``); "" for a RayCluster, which has
    them all. Only pods and pod templates get a ``schedulerName``."""
    if not scheduler:
        return
    if scheduler == KUBERNETES_WAS:  # a RayCluster's pods only; no label or annotation
        if isinstance(parent, RayCluster) and _is_pod_like(kind):
            add_pod_fields(parent, child_object)
        return
    meta = child(child_object, "metadata")
    labels = string_map(meta.get("labels"))
    annotations = string_map(meta.get("annotations"))
    scheduler_name = scheduler
    if scheduler == VOLCANO:
        _copy_label(parent, labels, VOLCANO_QUEUE_LABEL, VOLCANO_QUEUE_LABEL)
        _copy_label(parent, labels, PRIORITY_CLASS_LABEL, PRIORITY_CLASS_LABEL)
        annotations[VOLCANO_GROUP_ANNOTATION] = volcano_pod_group_name(parent)
        annotations[VOLCANO_TASK_SPEC_ANNOTATION] = group_name
    elif scheduler == SCHEDULER_PLUGINS:
        if gang_scheduling_enabled(parent):
            labels[PLUGINS_POD_GROUP_LABEL] = parent.metadata.name or ""
        scheduler_name = SCHEDULER_PLUGINS_SCHEDULER_NAME
    elif scheduler == YUNIKORN:
        _copy_label(parent, labels, YUNIKORN_APP_ID_LABEL, YUNIKORN_POD_APP_ID_LABEL)
        _copy_label(parent, labels, YUNIKORN_QUEUE_LABEL, YUNIKORN_POD_QUEUE_LABEL)
        if gang_scheduling_enabled(parent):
            given = (parent.metadata.annotations or {}).get(YUNIKORN_TASK_GROUPS_ANNOTATION)
            annotations[YUNIKORN_TASK_GROUPS_ANNOTATION] = given or yunikorn_task_groups(parent)
            if group_name:
                annotations[YUNIKORN_TASK_GROUP_NAME_ANNOTATION] = group_name
    elif scheduler == KAI_SCHEDULER:
        # Without a queue KAI leaves the pod pending; KubeRay only logs that.
        _copy_label(parent, labels, KAI_QUEUE_LABEL, KAI_QUEUE_LABEL)
    else:
        raise BatchSchedulerError(f"the scheduler is not supported, name={scheduler}")
    # KubeRay's child.SetLabels/SetAnnotations: a map, even an empty one, is always set.
    meta["labels"] = sorted_map(labels)
    if annotations or "annotations" in meta:
        meta["annotations"] = sorted_map(annotations)
    if _is_pod_like(kind):
        child(child_object, "spec")["schedulerName"] = scheduler_name


# -- Volcano ---------------------------------------------------------------------------


def volcano_pod_group_name(owner: Parent) -> str:
    """``ray-<name>-pg``; a RayJob's cluster (and its pods) use the RayJob's group."""
    name = owner.metadata.name or ""
    labels = _labels(owner)
    if labels.get(LabelKey.ORIGINATED_FROM_CRD) == "RayJob":
        name = labels.get(LabelKey.ORIGINATED_FROM_CR_NAME) or name
    return f"ray-{name}-pg"


def _quantities(totals: Mapping[str, Amount]) -> dict[str, str]:
    return {name: format_quantity(totals[name]) for name in sorted(totals)}


def volcano_cluster_gang(spec: RayClusterSpec) -> tuple[int, dict[str, Amount]]:
    """(minMember, minResources) of a cluster's gang: with the autoscaler the minimum
    (``minReplicas``), else the desired size; the head counts as one member."""
    cluster = RayCluster(spec=spec)
    autoscaling = bool(spec.enable_in_tree_autoscaling)
    return (
        min_replicas(cluster) + 1 if autoscaling else desired_replicas(cluster) + 1,
        worker_resources(cluster, minimum=autoscaling),
    )


def submitter_resources(job: RayJob) -> dict[str, Amount]:
    """What the submitter takes besides the cluster: its pod in K8sJobMode, its sidecar
    container in SidecarMode, nothing in the modes without a submitter pod."""
    mode = job.spec.submission_mode
    if mode == "K8sJobMode":
        template = job.spec.submitter_pod_template
        return pod_resources(template if template is not None else default_submitter_template())
    if mode == "SidecarMode":
        return pod_resources(default_submitter_template())
    return {}


def volcano_job_gang(job: RayJob) -> tuple[int, dict[str, Amount]]:
    """A RayJob's gang: its cluster's, plus the submitter's resources (not a member:
    KubeRay counts the submitter in minResources only)."""
    spec = job.spec.ray_cluster_spec
    if spec is None:
        raise BatchSchedulerError(
            f"gang scheduling does not support RayJob {namespace_of(job)}/"
            f"{job.metadata.name} referencing an existing RayCluster"
        )
    members, resources = volcano_cluster_gang(spec)
    return members, sum_resources([resources, submitter_resources(job)])


def build_volcano_pod_group(
    owner: Parent, *, min_member: int, min_resources: Mapping[str, Amount]
) -> JSONObject:
    """The PodGroup KubeRay creates: controlled by ``owner``, with its annotations, the
    queue, priority class and network topology from its labels, phase Pending."""
    labels = _labels(owner)
    spec: JSONObject = {
        "minMember": min_member,
        "minResources": dict[str, JSONValue](_quantities(min_resources)),
    }
    mode = labels.get(VOLCANO_TOPOLOGY_MODE_LABEL)
    if mode is not None:
        topology: JSONObject = {"mode": mode}
        tier = labels.get(VOLCANO_TOPOLOGY_TIER_LABEL)
        if tier is not None:
            try:
                topology["highestTierAllowed"] = int(tier, 10)
            except ValueError:
                raise BatchSchedulerError(
                    f"failed to convert {VOLCANO_TOPOLOGY_TIER_LABEL} label to int: "
                    f"{tier!r} for podgroup {volcano_pod_group_name(owner)} in namespace "
                    f"{namespace_of(owner)}"
                ) from None
        spec["networkTopology"] = topology
    if VOLCANO_QUEUE_LABEL in labels:
        spec["queue"] = labels[VOLCANO_QUEUE_LABEL]
    if PRIORITY_CLASS_LABEL in labels:
        spec["priorityClassName"] = labels[PRIORITY_CLASS_LABEL]
    metadata: JSONObject = {
        "name": volcano_pod_group_name(owner),
        "namespace": namespace_of(owner),
    }
    if owner.metadata.annotations:
        metadata["annotations"] = sorted_map(dict(owner.metadata.annotations))
    metadata["ownerReferences"] = [owner_reference(owner)]
    return {
        "apiVersion": VOLCANO_POD_GROUP_API,
        "kind": "PodGroup",
        "metadata": metadata,
        "spec": spec,
        "status": {"phase": "Pending"},
    }


def volcano_pod_group_for(owner: Parent) -> JSONObject | None:
    """The PodGroup ``owner`` needs now, or None: a RayJob's own cluster has none (the
    RayJob's group covers it)."""
    if isinstance(owner, RayJob):
        members, resources = volcano_job_gang(owner)
    else:
        if _labels(owner).get(LabelKey.ORIGINATED_FROM_CRD) == "RayJob":
            return None
        members, resources = volcano_cluster_gang(owner.spec)
    return build_volcano_pod_group(owner, min_member=members, min_resources=resources)


# -- scheduler-plugins -----------------------------------------------------------------


def build_plugins_pod_group(cluster: RayCluster) -> JSONObject:
    """scheduler-plugins' PodGroup, named as the cluster: the desired size (the head
    counts) and resources. Its owner reference is a plain one (not a controller)."""
    owner: JSONObject = {
        "apiVersion": cluster.api_version,
        "kind": cluster.kind,
        "name": cluster.metadata.name or "",
        "uid": cluster.metadata.uid or "",
    }
    return {
        "apiVersion": PLUGINS_POD_GROUP_API,
        "kind": "PodGroup",
        "metadata": {
            "name": cluster.metadata.name or "",
            "namespace": namespace_of(cluster),
            "ownerReferences": [owner],
        },
        "spec": {
            "minMember": desired_replicas(cluster) + 1,
            "minResources": dict[str, JSONValue](
                _quantities(worker_resources(cluster, minimum=False))
            ),
        },
    }


def pod_groups(cluster: RayCluster, scheduler: str) -> list[JSONObject]:
    """The PodGroup ``scheduler`` wants for ``cluster`` before its pods, if any (with the
    KubernetesWAS gate, its Workload first)."""
    if scheduler == VOLCANO:
        found = volcano_pod_group_for(cluster)
        return [found] if found is not None else []
    if scheduler == SCHEDULER_PLUGINS and gang_scheduling_enabled(cluster):
        return [build_plugins_pod_group(cluster)]
    if scheduler == KUBERNETES_WAS:
        return scheduling_objects(cluster)
    return []


# -- YuniKorn ---------------------------------------------------------------------------


_TOLERATION_FIELDS: Final = ("key", "operator", "value", "effect", "tolerationSeconds")


def _go_ordered(value: JSONObject) -> str:
    """A flat object in its own key order (Go's struct order), as json.Marshal writes it."""
    return "{" + ",".join(f"{go_json(k)}:{go_json(v)}" for k, v in value.items()) + "}"


def _task_group(name: str, members: int, template: Mapping[str, JSONValue]) -> str:
    """One task group as Go marshals KubeRay's TaskGroup struct (field order, omitempty).
    Tolerations in their struct order; an affinity with sorted keys (Go: struct order)."""
    spec = obj(template.get("spec") if isinstance(template, dict) else None)
    parts = [f'"minResource":{go_json(_quantities(pod_resources(template)))}']
    if spec.get("nodeSelector"):
        parts.append(f'"nodeSelector":{go_json(spec["nodeSelector"])}')
    if spec.get("affinity") is not None:
        parts.append(f'"affinity":{go_json(spec["affinity"])}')
    parts.append(f'"name":{go_json(name)}')
    if spec.get("tolerations"):
        tolerations = [in_field_order(t, _TOLERATION_FIELDS) for t in objects(spec["tolerations"])]
        parts.append(f'"tolerations":[{",".join(_go_ordered(t) for t in tolerations)}]')
    parts.append(f'"minMember":{members}')
    return "{" + ",".join(parts) + "}"


def yunikorn_task_groups(parent: Parent) -> str:
    """``yunikorn.apache.org/task-groups``: the head (1), each worker group at
    ``minReplicas`` x hosts (suspended ones too, as KubeRay), and for a RayJob its
    submitter (1)."""
    if isinstance(parent, RayJob):
        spec = parent.spec.ray_cluster_spec
        if spec is None:
            return "[]"
    else:
        spec = parent.spec
    groups = [_task_group(HEAD_GROUP, 1, spec.head_group_spec.template)]
    for group in spec.worker_group_specs or ():
        members = (group.min_replicas or 0) * group.num_of_hosts
        groups.append(_task_group(group.group_name, members, group.template))
    if isinstance(parent, RayJob):
        submitter = parent.spec.submitter_pod_template
        template = submitter if submitter is not None else default_submitter_template()
        groups.append(_task_group(SUBMITTER_GROUP, 1, template))
    return "[" + ",".join(groups) + "]"


# -- KAI --------------------------------------------------------------------------------


def refuse_on_submission(scheduler: str, owner: Parent) -> None:
    """The schedulers that refuse a kind or mode at submission, as KubeRay does: the
    RayJob then stays Initializing and is retried. scheduler-plugins handles
    RayClusters only; KAI cannot gang a K8sJobMode RayJob (its submitter pod comes
    after the cluster is ready)."""
    if not isinstance(owner, RayJob):
        return
    if scheduler == SCHEDULER_PLUGINS:
        raise BatchSchedulerError("currently only RayCluster is supported, got *v1.RayJob")
    if scheduler == KAI_SCHEDULER and owner.spec.submission_mode == "K8sJobMode":
        raise BatchSchedulerError(
            "KAI-Scheduler does not support RayJob with K8sJobMode: the submitter pod is "
            "created after RayCluster is ready, preventing proper gang scheduling"
        )
