"""The Ingress in front of the head's dashboard (``headGroupSpec.enableIngress``)."""

from __future__ import annotations

import copy
from dataclasses import dataclass

from operator_runtime.api import JSONObject, JSONValue, RayCluster
from operator_runtime.api.annotations import AnnotationKey
from operator_runtime.api.labels import APP_NAME_KUBERAY, CREATED_BY_KUBERAY, LabelKey, NodeType
from operator_runtime.render.metadata import object_meta
from operator_runtime.render.names import (
    cluster_name,
    head_service_name,
    identifier,
    ingress_name,
    namespace_of,
)
from operator_runtime.render.services import DEFAULT_PORTS, service_ports


@dataclass(frozen=True, slots=True)
class IngressParams:
    cluster: RayCluster


def ingress_enabled(cluster: RayCluster) -> bool:
    return bool(cluster.spec.head_group_spec.enable_ingress)


def build_head_ingress(*, params: IngressParams) -> JSONObject:
    """Routes ``ingressOptions.path`` (default ``/``, Prefix) to the head Service's
    dashboard port. Every cluster annotation is copied, so users can configure their
    ingress controller through them, except the deprecated ingress-class annotation,
    which becomes ``ingressClassName`` instead (setting both is refused by the API)."""
    cluster = params.cluster
    options = cluster.spec.head_group_spec.ingress_options
    annotations = dict(cluster.metadata.annotations or {})
    ingress_class = annotations.pop(AnnotationKey.INGRESS_CLASS, None)
    dashboard_port = service_ports(cluster).get("dashboard", DEFAULT_PORTS["dashboard"])
    path_value = options.path if options and options.path is not None else "/"
    path: JSONObject = {"path": path_value} if path_value else {}
    path["pathType"] = options.path_type if options and options.path_type else "Prefix"
    path["backend"] = {
        "service": {"name": head_service_name(cluster), "port": {"number": dashboard_port}}
    }
    rule: JSONObject = {}
    if options is not None and options.host:
        rule["host"] = options.host
    rule["http"] = {"paths": [path]}
    spec: JSONObject = {}
    if ingress_class is not None:
        spec["ingressClassName"] = ingress_class
    if options is not None and options.tls:
        spec["tls"] = list[JSONValue](copy.deepcopy(options.tls))
    spec["rules"] = [rule]
    labels: dict[str, str] = {
        LabelKey.CLUSTER: cluster_name(cluster),
        LabelKey.IDENTIFIER: identifier(cluster, NodeType.HEAD),
        LabelKey.APP_NAME: APP_NAME_KUBERAY,
        LabelKey.CREATED_BY: CREATED_BY_KUBERAY,
    }
    meta = object_meta(
        name=ingress_name(cluster),
        namespace=namespace_of(cluster),
        labels=labels,
        annotations=annotations,
        owner=cluster,
    )
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": meta, "spec": spec}
