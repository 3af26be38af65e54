"""What a RayCluster spec holds: the pods the controller keeps for it and the resources
they request, counted by the operator's own functions.

- pods: the head (none while ``spec.suspend``) and, per worker group,
  ``desired_worker_replicas`` x ``numOfHosts`` (0 for a suspended group), as the
  controller's pod step (``controllers/raycluster/pods.py``) keeps them;
- resources: as ``status.desired*`` counts them (``desired_amounts``): the head plus
  each non-suspended group's pod x ``replicas`` as written x hosts;
- with the autoscaler, the range between every group's minimum and maximum.

Every kind's verdict counts a cluster here: a RayCluster's own, the clusters a
RayService or a RayJob makes from its embedded spec.
"""

from __future__ import annotations

from collections.abc import Mapping

from operator_runtime.api import RayCluster
from operator_runtime.render import desired_worker_replicas
from operator_runtime.render.resources import (
    Amount,
    desired_amounts,
    pod_resources,
    sum_resources,
    summary_amounts,
    worker_resources,
)

from .model import add_resources

__all__ = [
    "HEAD",
    "autoscaler_bounds",
    "cluster_pods",
    "cluster_resources",
    "groups_without_replicas",
]

HEAD = "head"


def cluster_pods(cluster: RayCluster) -> dict[str, int]:
    """Pods the controller keeps for ``cluster``, by group (``head`` for the head)."""
    if cluster.spec.suspend:
        return {}
    pods = {HEAD: 1}
    for group in cluster.spec.worker_group_specs or ():
        pods[group.group_name] = desired_worker_replicas(group) * group.num_of_hosts
    return pods


def cluster_resources(cluster: RayCluster) -> dict[str, Amount]:
    """``status.desired*`` as amounts; nothing while the whole cluster is suspended
    (it then has no pods, whatever its groups say)."""
    if cluster.spec.suspend:
        return add_resources()
    return desired_amounts(cluster)


def autoscaler_bounds(cluster: RayCluster) -> tuple[dict[str, Amount], dict[str, Amount]]:
    """What an autoscaled cluster requests at its groups' minimum (KubeRay's
    CalculateMinResources, which the gang schedulers reserve) and at their maximum (the
    head plus each group's pod x ``maxReplicas`` x hosts; KubeRay counts no such sum, the
    review adds it for the upper bound). Both empty without the autoscaler."""
    if not cluster.spec.enable_in_tree_autoscaling or cluster.spec.suspend:
        return {}, {}
    lowest = summary_amounts(worker_resources(cluster, minimum=True))
    parts = [pod_resources(cluster.spec.head_group_spec.template)]
    for group in cluster.spec.worker_group_specs or ():
        if group.suspend or group.max_replicas is None:
            continue
        count = group.max_replicas * group.num_of_hosts
        parts.append({k: v.times(count) for k, v in pod_resources(group.template).items()})
    return lowest, summary_amounts(sum_resources(parts))


def groups_without_replicas(spec: Mapping[str, object] | None) -> list[str]:
    """Groups a cluster spec's document gives no ``replicas`` (the model defaults it to
    0, as the CRD does, so only the document tells)."""
    groups = (spec or {}).get("workerGroupSpecs")
    if not isinstance(groups, list):
        return []
    return [
        str(group.get("groupName"))
        for group in groups
        if isinstance(group, dict) and "replicas" not in group
    ]
