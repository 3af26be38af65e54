"""Names of the objects the operator creates, and KubeRay's truncation rules.

KubeRay keeps the *end* of an over-long name (CheckName, CheckLabel) but the *start*
of a pod-name prefix; both rules are reproduced exactly because the operator finds
existing objects by these names.
"""

from __future__ import annotations

import unicodedata
from typing import Final

from operator_runtime.api import RayCluster, RayJob, RayService
from operator_runtime.api.labels import NodeType
from operator_runtime.render._json import obj, text

CHECK_NAME_MAX: Final = 50
"""63 minus room for ``-worker-`` and a 5-character random suffix."""
CHECK_LABEL_MAX: Final = 63
POD_PREFIX_MAX: Final = 50
DEFAULT_NAMESPACE: Final = "default"


def _is_punct(char: str) -> bool:
    # Go's unicode.IsPunct is the Unicode "P*" categories; "-", "." and "_" are in it.
    return unicodedata.category(char).startswith("P")


def check_name(name: str) -> str:
    """KubeRay's CheckName: keep the last 50 characters; a leading digit or punctuation
    becomes ``r``. Used for the auth Secret, autoscaler RBAC objects and the Ingress."""
    if len(name) > CHECK_NAME_MAX:
        name = name[len(name) - CHECK_NAME_MAX :]
    if name and name[0].isdigit() and name[0].isascii():
        name = "r" + name[1:]
    if name and _is_punct(name[0]):
        name = "r" + name[1:]
    return name


def check_label(value: str) -> str:
    """KubeRay's CheckLabel: keep the last 63 characters; leading punctuation -> ``r``."""
    if len(value) > CHECK_LABEL_MAX:
        value = value[len(value) - CHECK_LABEL_MAX :]
    if value and _is_punct(value[0]):
        value = "r" + value[1:]
    return value


def pod_name(prefix: str, node_type: NodeType, *, generate: bool) -> str:
    """Pod ``generateName`` (``generate=True``, trailing ``-``) or name: the first 50
    characters of ``prefix``, then ``-head``/``-worker``, lowercased."""
    result = (prefix[:POD_PREFIX_MAX] + "-" + node_type.value).lower()
    return result + "-" if generate else result


def namespace_of(resource: RayCluster | RayJob | RayService) -> str:
    """The object's namespace; ``default`` for a manifest that names none (as kubectl)."""
    return resource.metadata.namespace or DEFAULT_NAMESPACE


def cluster_name(cluster: RayCluster) -> str:
    return cluster.metadata.name or ""


def identifier(cluster: RayCluster, node_type: NodeType) -> str:
    """The ``ray.io/identifier`` label value: CheckLabel(``<cluster>-<node type>``)."""
    return check_label(f"{cluster_name(cluster)}-{node_type.value}")


def head_service_name(cluster: RayCluster) -> str:
    """``headService.metadata.name`` if the user set one, else ``<cluster>-head-svc``."""
    head_service = cluster.spec.head_group_spec.head_service
    custom = text(obj(obj(head_service).get("metadata")).get("name"))
    return custom or f"{cluster_name(cluster)}-head-svc"


def owner_head_service_name(owner_name: str) -> str:
    """``<j>-head-svc``/``<s>-head-svc``: the Service a RayJob or RayService owns, pointing
    at its current cluster's head. Never the cluster's ``headService`` name."""
    return f"{owner_name}-head-svc"


def head_fqdn(cluster: RayCluster, cluster_domain: str) -> str:
    """``<head service>.<namespace>.svc.<domain>``: the address workers dial."""
    return f"{head_service_name(cluster)}.{namespace_of(cluster)}.svc.{cluster_domain}"


def serve_service_name(owner_name: str) -> str:
    return f"{owner_name}-serve-svc"


def serve_service_label(owner_name: str) -> str:
    """The ``ray.io/serve`` label value of a serve Service."""
    return f"{owner_name}-serve"


def headless_service_name(cluster: RayCluster) -> str:
    return f"{cluster_name(cluster)}-headless"


def ingress_name(cluster: RayCluster) -> str:
    return check_name(f"{cluster_name(cluster)}-head-ingress")


def redis_cleanup_job_name(cluster: RayCluster) -> str:
    return check_label(f"{cluster_name(cluster)}-redis-cleanup")


def autoscaler_service_account_name(cluster: RayCluster) -> str:
    """The head template's serviceAccountName, else the cluster name (not yet clipped)."""
    spec = obj(cluster.spec.head_group_spec.template.get("spec"))
    return text(spec.get("serviceAccountName")) or cluster_name(cluster)


def auth_secret_name(cluster: RayCluster) -> str:
    return check_name(cluster_name(cluster))


def gcs_storage_pvc_name(cluster: RayCluster) -> str:
    """The user's ``storage.claimName`` if set, else ``<cluster>-gcs-pvc``."""
    options = cluster.spec.gcs_fault_tolerance_options
    if options is not None and options.storage is not None and options.storage.claim_name:
        return options.storage.claim_name
    return f"{cluster_name(cluster)}-gcs-pvc"
