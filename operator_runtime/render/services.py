"""Services of a RayCluster: the head Service, the serve Service and the headless
Service of multi-host worker groups; and the head Service a RayJob owns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from operator_runtime.api import JSONObject, JSONValue, RayCluster, RayJob
from operator_runtime.api.labels import LabelKey, NodeType
from operator_runtime.render._json import (
    child,
    deep_copy,
    in_field_order,
    obj,
    objects,
    sorted_map,
    string_map,
    text,
)
from operator_runtime.render._podfinish import META_FIELDS
from operator_runtime.render.metadata import head_selector_labels, object_meta, owner_reference
from operator_runtime.render.names import (
    check_label,
    cluster_name,
    head_service_name,
    headless_service_name,
    namespace_of,
    owner_head_service_name,
    serve_service_label,
    serve_service_name,
)
from operator_runtime.render.options import RenderOptions
from operator_runtime.render.pods import RenderError

DEFAULT_PORTS: Final = {
    "client": 10001,
    "gcs-server": 6379,
    "dashboard": 8265,
    "metrics": 8080,
    "serve": 8000,
}
_SERVICE_SPEC_FIELDS: Final[tuple[str, ...]] = (
    "ports", "selector", "clusterIP", "type", "publishNotReadyAddresses",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class ServiceParams:
    cluster: RayCluster
    options: RenderOptions = field(default_factory=RenderOptions)


def service_ports(cluster: RayCluster) -> dict[str, int]:
    """Port name -> number exposed for the head: the head Ray container's ports (an
    unnamed one becomes ``<n>-port``), KubeRay's defaults if it declares none, and
    ``metrics`` always. A repeated name keeps its last port."""
    spec = obj(cluster.spec.head_group_spec.template.get("spec"))
    containers = objects(spec.get("containers"))
    ports: dict[str, int] = {}
    for port in objects(containers[0].get("ports")) if containers else []:
        number = port.get("containerPort")
        if isinstance(number, int) and not isinstance(number, bool):
            ports[text(port.get("name")) or f"{number}-port"] = number
    if not ports:
        ports = dict(DEFAULT_PORTS)
    ports.setdefault("metrics", DEFAULT_PORTS["metrics"])
    return ports


def _service(meta: JSONObject, spec: JSONObject) -> JSONObject:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta,
        "spec": in_field_order(spec, _SERVICE_SPEC_FIELDS),
    }


def build_head_service(*, params: ServiceParams) -> JSONObject:
    """The head Service. Headless (``clusterIP: None``) unless a ClusterIP is asked for:
    a cluster has one head, and workers must reach it before it is Ready."""
    cluster = params.cluster
    head_spec = cluster.spec.head_group_spec
    template_labels = string_map(obj(head_spec.template.get("metadata")).get("labels"))
    selector = head_selector_labels(cluster)
    if LabelKey.APP_NAME in template_labels:
        selector[LabelKey.APP_NAME] = template_labels[LabelKey.APP_NAME]
    ports: list[JSONValue] = [
        {"name": name, "appProtocol": "tcp", "port": number}
        for name, number in sorted(service_ports(cluster).items())
    ]
    annotations = dict(cluster.spec.head_service_annotations or {})
    service_type = head_spec.service_type or ""
    if head_spec.head_service is not None:
        return _custom_head_service(params, selector, annotations, ports)
    spec: JSONObject = {"ports": ports, "selector": sorted_map(selector)}
    if service_type:
        spec["type"] = service_type
    if not params.options.head_cluster_ip_service and service_type in ("", "ClusterIP"):
        spec["clusterIP"] = "None"
        spec["publishNotReadyAddresses"] = True
    meta = object_meta(
        name=head_service_name(cluster),
        namespace=namespace_of(cluster),
        labels=selector,
        annotations=annotations,
        owner=cluster,
    )
    return _service(meta, spec)


def _custom_head_service(
    params: ServiceParams,
    selector: dict[str, str],
    annotations: dict[str, str],
    ports: list[JSONValue],
) -> JSONObject:
    """The user's ``headService`` with the selector forced, ``headServiceAnnotations``
    and the default ports added, and name/type filled in where empty."""
    cluster = params.cluster
    head_spec = cluster.spec.head_group_spec
    service = deep_copy(head_spec.head_service or {})
    meta = child(service, "metadata")
    spec = child(service, "spec")
    spec["selector"] = sorted_map(selector)
    meta["annotations"] = sorted_map({**string_map(meta.get("annotations")), **annotations})
    if not meta["annotations"]:
        del meta["annotations"]
    user_ports = objects(spec.get("ports"))
    spec["ports"] = [*user_ports, *ports]
    meta["labels"] = sorted_map({**string_map(meta.get("labels")), **selector})
    meta["name"] = text(meta.get("name")) or head_service_name(cluster)
    meta["namespace"] = namespace_of(cluster)
    if not text(spec.get("type")) and head_spec.service_type:
        spec["type"] = head_spec.service_type
    meta["ownerReferences"] = [owner_reference(cluster)]
    service["metadata"] = in_field_order(meta, META_FIELDS)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        **{k: v for k, v in service.items() if k not in ("apiVersion", "kind")},
    }


def build_serve_service(*, params: ServiceParams) -> JSONObject:
    """``<cluster>-serve-svc`` (annotation ``ray.io/enable-serve-service``): the head
    container's ``serve``/``serve-*`` ports, selecting every pod of the cluster."""
    cluster = params.cluster
    name = cluster_name(cluster)
    serving = {
        port_name: number
        for port_name, number in service_ports(cluster).items()
        if port_name == "serve" or port_name.startswith("serve-")
    }
    if not serving:
        raise RenderError(
            f"RayCluster {name!r}: name a head container port 'serve' (or 'serve-<x>', "
            "e.g. 'serve-grpc'); without one no Service for Ray Serve can be created"
        )
    labels: dict[str, str] = {
        LabelKey.ORIGINATED_FROM_CR_NAME: name,
        LabelKey.ORIGINATED_FROM_CRD: "RayCluster",
        LabelKey.SERVE: serve_service_label(name),
    }
    spec: JSONObject = {
        "ports": [{"name": n, "port": p} for n, p in sorted(serving.items())],
        "selector": sorted_map({LabelKey.CLUSTER: name}),
    }
    if cluster.spec.head_group_spec.service_type:
        spec["type"] = cluster.spec.head_group_spec.service_type
    meta = object_meta(
        name=serve_service_name(name),
        namespace=namespace_of(cluster),
        labels=labels,
        owner=cluster,
    )
    return _service(meta, spec)


def needs_headless_service(cluster: RayCluster) -> bool:
    """Only multi-host groups need stable per-pod DNS names."""
    return any(group.num_of_hosts > 1 for group in cluster.spec.worker_group_specs or ())


def build_headless_service(*, params: ServiceParams) -> JSONObject:
    """``<cluster>-headless``: DNS for every worker pod, ready or not, so the hosts of
    a multi-host replica can find each other while they start."""
    cluster = params.cluster
    name = cluster_name(cluster)
    spec: JSONObject = {
        "selector": sorted_map({LabelKey.CLUSTER: name, LabelKey.NODE_TYPE: NodeType.WORKER}),
        "clusterIP": "None",
        "type": "ClusterIP",
        "publishNotReadyAddresses": True,
    }
    meta = object_meta(
        name=headless_service_name(cluster),
        namespace=namespace_of(cluster),
        labels={LabelKey.HEADLESS_WORKER_SVC: name},
        owner=cluster,
    )
    return _service(meta, spec)


def build_rayjob_head_service(
    *, job: RayJob, cluster: RayCluster, options: RenderOptions | None = None
) -> JSONObject:
    """``<j>-head-svc``: a stable name for the head of whichever cluster the RayJob runs
    on now. It is the cluster's head Service (selector, ports, type, a custom
    ``headService``) without ``headServiceAnnotations`` (KubeRay passes none), renamed,
    labelled for the RayJob and owned by it."""
    plain = cluster.model_copy(
        update={"spec": cluster.spec.model_copy(update={"head_service_annotations": None})}
    )
    service = build_head_service(
        params=ServiceParams(cluster=plain, options=options or RenderOptions())
    )
    name = job.metadata.name or ""
    meta = obj(service.get("metadata"))
    meta["name"] = owner_head_service_name(name)
    meta["namespace"] = namespace_of(job)
    meta["labels"] = sorted_map(
        {
            LabelKey.ORIGINATED_FROM_CR_NAME: name,
            LabelKey.ORIGINATED_FROM_CRD: "RayJob",
            LabelKey.NODE_TYPE: NodeType.HEAD,
            LabelKey.IDENTIFIER: check_label(f"{name}-{NodeType.HEAD.value}"),
        }
    )
    meta["ownerReferences"] = [owner_reference(job)]
    service["metadata"] = in_field_order(meta, META_FIELDS)
    return service
