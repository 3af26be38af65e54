"""The NetworkPolicies that isolate a RayCluster's pods (``spec.networkPolicy``, feature
gate ``RayClusterNetworkPolicy``), as KubeRay v1.7.0's NetworkPolicy controller builds
them.

One policy for the head (``<cluster>-head``) and one per worker group
(``<cluster>-workers-<group>``). The mode picks the policy types: ``DenyAll`` (the
default) both, ``DenyAllIngress`` only Ingress, ``DenyAllEgress`` only Egress; a
direction without its type is left open, so its rules are not written at all. In each
restricted direction the first rule lets the pods of the same cluster in (or out) on
every port. The head's ingress also admits the submitter pod of the RayJob that owns
the cluster, on the dashboard port, when that RayJob submits in K8sJobMode (the only
mode with a submitter pod of its own). The user's rules come last: ``head`` for the
head; for a group, its ``workerGroups`` entry if there is one, otherwise ``worker``.

Nothing else is allowed: not DNS, not the API server (the autoscaler needs it), not
the operator's calls to the dashboard. Under a mode that restricts egress the pods
cannot even resolve the head Service until the user adds a DNS egress rule.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from operator_runtime.api import JSONObject, JSONValue, RayCluster
from operator_runtime.api.clusteroptions import NetworkPolicyConfig, NetworkPolicyRules
from operator_runtime.api.labels import (
    APP_NAME_KUBERAY,
    CREATED_BY_KUBERAY,
    HEAD_GROUP,
    LabelKey,
    NodeType,
)
from operator_runtime.render.metadata import object_meta
from operator_runtime.render.names import cluster_name, namespace_of
from operator_runtime.render.services import DEFAULT_PORTS

NETWORK_POLICY_API_VERSION: Final = "networking.k8s.io/v1"
DASHBOARD_PORT_PARAM: Final = "dashboard-port"
_INT32_MAX: Final = 2**31 - 1
_GO_INT: Final = re.compile(r"[+-]?[0-9]+")
"""What Go's ``strconv.ParseInt(s, 10, 32)`` reads: an optional sign and decimal digits."""


@dataclass(frozen=True, slots=True)
class NetworkPolicyParams:
    """A RayCluster with ``spec.networkPolicy`` set; ``group_name`` picks a worker
    group's policy ("" for the head's)."""

    cluster: RayCluster
    group_name: str = ""


def head_network_policy_name(cluster: RayCluster) -> str:
    return f"{cluster_name(cluster)}-head"


def worker_network_policy_name(cluster: RayCluster, group_name: str) -> str:
    return f"{cluster_name(cluster)}-workers-{group_name}"


def _config(cluster: RayCluster) -> NetworkPolicyConfig:
    config = cluster.spec.network_policy
    if config is None:
        raise ValueError(f"RayCluster {cluster_name(cluster)!r} has no spec.networkPolicy")
    return config


def _restricts(config: NetworkPolicyConfig) -> tuple[bool, bool]:
    """(ingress restricted, egress restricted) under the config's mode."""
    return config.mode in ("DenyAll", "DenyAllIngress"), config.mode in ("DenyAll", "DenyAllEgress")


def _same_cluster_peer(cluster: RayCluster) -> JSONObject:
    return {"podSelector": {"matchLabels": {LabelKey.CLUSTER.value: cluster_name(cluster)}}}


def dashboard_port(cluster: RayCluster) -> int:
    """``rayStartParams["dashboard-port"]`` when it reads as a 32-bit integer, else
    8265 (the value is not range-checked further, as in KubeRay)."""
    params = cluster.spec.head_group_spec.ray_start_params or {}
    value = params.get(DASHBOARD_PORT_PARAM)
    if value is not None and _GO_INT.fullmatch(value):
        number = int(value)
        if -_INT32_MAX - 1 <= number <= _INT32_MAX:
            return number
    return DEFAULT_PORTS["dashboard"]


def submitter_peer(cluster: RayCluster) -> JSONObject | None:
    """The submitter pod of the RayJob that controls this cluster, if that RayJob
    submits in K8sJobMode (``ray.io/job-submission-mode`` on the cluster), else None.
    The pod is matched by the labels every submitter Job's pods carry."""
    labels = cluster.metadata.labels or {}
    if labels.get(LabelKey.JOB_SUBMISSION_MODE) != "K8sJobMode":
        return None
    for ref in cluster.metadata.owner_references or ():
        if ref.kind == "RayJob" and ref.controller and ref.api_version.startswith("ray.io/"):
            return {
                "podSelector": {
                    "matchLabels": {
                        LabelKey.ORIGINATED_FROM_CR_NAME.value: ref.name,
                        LabelKey.ORIGINATED_FROM_CRD.value: "RayJob",
                    }
                }
            }
    return None


def _user_rules(rules: NetworkPolicyRules | None, direction: str) -> list[JSONValue]:
    if rules is None:
        return []
    chosen = rules.ingress_rules if direction == "ingress" else rules.egress_rules
    return [copy.deepcopy(rule) for rule in chosen or ()]


def worker_group_rules(config: NetworkPolicyConfig, group_name: str) -> NetworkPolicyRules | None:
    """A group's own ``workerGroups`` entry (the first of its name), which replaces
    ``worker`` entirely, or else ``worker``."""
    for entry in config.worker_groups or ():
        if entry.group_name == group_name:
            return entry
    return config.worker


def _policy(
    cluster: RayCluster,
    *,
    name: str,
    group_label: str,
    pod_selector: Mapping[str, str],
    ingress: list[JSONValue] | None,
    egress: list[JSONValue] | None,
) -> JSONObject:
    types: list[JSONValue] = []
    spec: JSONObject = {"podSelector": {"matchLabels": dict(pod_selector)}}
    if ingress is not None:
        types.append("Ingress")
        spec["ingress"] = ingress
    if egress is not None:
        types.append("Egress")
        spec["egress"] = egress
    spec["policyTypes"] = types
    labels: dict[str, str] = {
        LabelKey.CLUSTER: cluster_name(cluster),
        LabelKey.GROUP: group_label,
        LabelKey.APP_NAME: APP_NAME_KUBERAY,
        LabelKey.CREATED_BY: CREATED_BY_KUBERAY,
    }
    meta = object_meta(name=name, namespace=namespace_of(cluster), labels=labels, owner=cluster)
    return {
        "apiVersion": NETWORK_POLICY_API_VERSION,
        "kind": "NetworkPolicy",
        "metadata": meta,
        "spec": spec,
    }


def build_head_network_policy(*, params: NetworkPolicyParams) -> JSONObject:
    """``<cluster>-head``: selects the head pod (cluster and node type)."""
    cluster = params.cluster
    config = _config(cluster)
    restrict_in, restrict_out = _restricts(config)
    ingress: list[JSONValue] | None = None
    egress: list[JSONValue] | None = None
    if restrict_in:
        ingress = [{"from": [_same_cluster_peer(cluster)]}]
        peer = submitter_peer(cluster)
        if peer is not None:
            port: JSONObject = {"protocol": "TCP", "port": dashboard_port(cluster)}
            ingress.append({"from": [peer], "ports": [port]})
        ingress.extend(_user_rules(config.head, "ingress"))
    if restrict_out:
        egress = [{"to": [_same_cluster_peer(cluster)]}, *_user_rules(config.head, "egress")]
    return _policy(
        cluster,
        name=head_network_policy_name(cluster),
        group_label=HEAD_GROUP,
        pod_selector={
            LabelKey.CLUSTER.value: cluster_name(cluster),
            LabelKey.NODE_TYPE.value: NodeType.HEAD.value,
        },
        ingress=ingress,
        egress=egress,
    )


def build_worker_network_policy(*, params: NetworkPolicyParams) -> JSONObject:
    """``<cluster>-workers-<group>``: selects the group's worker pods."""
    cluster, group = params.cluster, params.group_name
    config = _config(cluster)
    rules = worker_group_rules(config, group)
    restrict_in, restrict_out = _restricts(config)
    ingress: list[JSONValue] | None = None
    egress: list[JSONValue] | None = None
    if restrict_in:
        ingress = [{"from": [_same_cluster_peer(cluster)]}, *_user_rules(rules, "ingress")]
    if restrict_out:
        egress = [{"to": [_same_cluster_peer(cluster)]}, *_user_rules(rules, "egress")]
    return _policy(
        cluster,
        name=worker_network_policy_name(cluster, group),
        group_label=group,
        pod_selector={
            LabelKey.CLUSTER.value: cluster_name(cluster),
            LabelKey.NODE_TYPE.value: NodeType.WORKER.value,
            LabelKey.GROUP.value: group,
        },
        ingress=ingress,
        egress=egress,
    )


def build_network_policies(*, params: NetworkPolicyParams) -> list[JSONObject]:
    """The head's policy, then one per worker group in spec order (``group_name`` is
    ignored); none without ``spec.networkPolicy``."""
    cluster = params.cluster
    if cluster.spec.network_policy is None:
        return []
    policies = [build_head_network_policy(params=NetworkPolicyParams(cluster))]
    for group in cluster.spec.worker_group_specs or ():
        policies.append(
            build_worker_network_policy(params=NetworkPolicyParams(cluster, group.group_name))
        )
    return policies


def with_default_protocols(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a NetworkPolicy spec where every port without a protocol says TCP, as
    the API server stores it: a user rule that leaves it out does not look changed."""
    result = copy.deepcopy(dict(spec))
    for direction in ("ingress", "egress"):
        for rule in result.get(direction) or ():
            for port in rule.get("ports") or () if isinstance(rule, dict) else ():
                if isinstance(port, dict) and not port.get("protocol"):
                    port["protocol"] = "TCP"
    return result


def _without_empty_lists(value: Any) -> Any:
    """``value`` with every empty list dropped from its objects: the API server omits
    an empty ``from``, ``ports`` or ``matchExpressions``, which means the same as none."""
    if isinstance(value, dict):
        return {k: _without_empty_lists(v) for k, v in value.items() if v != []}
    if isinstance(value, list):
        return [_without_empty_lists(item) for item in value]
    return value


def network_policy_matches(existing: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    """Whether ``existing`` already has ``desired``'s spec and exactly its labels (the
    two things an update writes)."""
    existing_labels = (existing.get("metadata") or {}).get("labels") or {}
    desired_labels = (desired.get("metadata") or {}).get("labels") or {}
    if existing_labels != desired_labels:
        return False
    have = _without_empty_lists(with_default_protocols(existing.get("spec") or {}))
    want = _without_empty_lists(with_default_protocols(desired.get("spec") or {}))
    return bool(have == want)
