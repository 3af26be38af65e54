"""Owner references and the label sets shared by the objects of one RayCluster.

``owner_reference`` serves every owner KubeRay sets: a RayCluster for its pods and
Services, a RayJob for its cluster, head Service and submitter Job (a RayService later).

Every builder takes its labels from here so that the selectors the controllers list
by (cluster, node type, identifier) can never drift apart between object kinds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from operator_runtime.api import JSONObject, RayCluster, RayJob, RayService
from operator_runtime.api.labels import (
    APP_NAME_KUBERAY,
    CREATED_BY_KUBERAY,
    IS_RAY_NODE_YES,
    LabelKey,
    NodeType,
)
from operator_runtime.render._json import sorted_map
from operator_runtime.render.names import cluster_name, identifier

CreatorKind = Literal["RayCluster", "RayJob", "RayService"]
Owner = RayCluster | RayJob | RayService
"""A custom resource that owns (and garbage-collects) the objects rendered for it."""

# Users may override every base pod label except these three: the controllers select
# pods by them.
PROTECTED_POD_LABELS = frozenset({LabelKey.NODE_TYPE, LabelKey.GROUP, LabelKey.CLUSTER})


def owner_reference(owner: Owner) -> JSONObject:
    """The controller reference to ``owner`` (``SetControllerReference``).

    A manifest read from a file has no UID yet; ``uid`` is then empty and the API
    server would refuse the object, which is the honest outcome for a dry render.
    """
    return {
        "apiVersion": owner.api_version,
        "kind": owner.kind,
        "name": owner.metadata.name or "",
        "uid": owner.metadata.uid or "",
        "controller": True,
        "blockOwnerDeletion": True,
    }


def creator_kind(cluster: RayCluster) -> CreatorKind:
    """Which CRD created this cluster, from ``ray.io/originated-from-crd``."""
    value = (cluster.metadata.labels or {}).get(LabelKey.ORIGINATED_FROM_CRD, "")
    if value == "RayJob":
        return "RayJob"
    if value == "RayService":
        return "RayService"
    return "RayCluster"


def cluster_labels(cluster: RayCluster) -> dict[str, str]:
    """``{ray.io/cluster, app.kubernetes.io/name, created-by}``: RBAC objects' labels."""
    return {
        LabelKey.CLUSTER: cluster_name(cluster),
        LabelKey.APP_NAME: APP_NAME_KUBERAY,
        LabelKey.CREATED_BY: CREATED_BY_KUBERAY,
    }


def head_selector_labels(cluster: RayCluster) -> dict[str, str]:
    """The head Service's default labels and selector (also the head pod's base)."""
    return {
        LabelKey.CLUSTER: cluster_name(cluster),
        LabelKey.NODE_TYPE: NodeType.HEAD,
        LabelKey.IDENTIFIER: identifier(cluster, NodeType.HEAD),
        LabelKey.APP_NAME: APP_NAME_KUBERAY,
        LabelKey.CREATED_BY: CREATED_BY_KUBERAY,
    }


def pod_labels(
    cluster: RayCluster,
    node_type: NodeType,
    group: str,
    overrides: Mapping[str, str],
) -> dict[str, str]:
    """Base pod labels with user ``overrides`` on top, except the protected keys."""
    labels: dict[str, str] = {
        LabelKey.IS_RAY_NODE: IS_RAY_NODE_YES,
        LabelKey.CLUSTER: cluster_name(cluster),
        LabelKey.NODE_TYPE: node_type,
        LabelKey.GROUP: group,
        LabelKey.IDENTIFIER: identifier(cluster, node_type),
        LabelKey.APP_NAME: APP_NAME_KUBERAY,
        LabelKey.CREATED_BY: CREATED_BY_KUBERAY,
    }
    labels.update({k: v for k, v in overrides.items() if k not in PROTECTED_POD_LABELS})
    return labels


def object_meta(
    *,
    name: str,
    namespace: str,
    labels: Mapping[str, str],
    owner: Owner | None,
    annotations: Mapping[str, str] | None = None,
) -> JSONObject:
    """``metadata`` of a child object; owned by ``owner`` unless it is None."""
    meta: JSONObject = {"name": name, "namespace": namespace, "labels": sorted_map(labels)}
    if annotations:
        meta["annotations"] = sorted_map(annotations)
    if owner is not None:
        meta["ownerReferences"] = [owner_reference(owner)]
    return meta
