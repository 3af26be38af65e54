"""Services of a RayCluster: the head Service, the serve Service and the headless
Service of multi-host worker groups; the head Service a RayJob or RayService owns, and a
RayService's serve Services."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from operator_runtime.api import JSONObject, JSONValue, RayCluster, RayJob, RayService
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
from operator_runtime.render.metadata import (
    Owner,
    head_selector_labels,
    object_meta,
    owner_reference,
)
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
from operator_runtime.render.rayservice_cluster import incremental_upgrade_enabled

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


def serving_ports(cluster: RayCluster) -> dict[str, int]:
    """The head ports Ray Serve answers on: ``serve`` and ``serve-<x>`` (e.g. gRPC)."""
    return {
        port_name: number
        for port_name, number in service_ports(cluster).items()
        if port_name == "serve" or port_name.startswith("serve-")
    }


def _no_serve_port(name: str) -> RenderError:
    return RenderError(
        f"RayCluster {name!r}: name a head container port 'serve' (or 'serve-<x>', "
        "e.g. 'serve-grpc'); without one no Service for Ray Serve can be created"
    )


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
    serving = serving_ports(cluster)
    if not serving:
        raise _no_serve_port(name)
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


def _owner_head_service(
    *, owner: RayJob | RayService, cluster: RayCluster, options: RenderOptions | None
) -> JSONObject:
    """``<owner>-head-svc``: a stable name for the head of whichever cluster the owner
    uses now. It is the cluster's head Service (selector, ports, type, a custom
    ``headService``) without ``headServiceAnnotations`` (KubeRay passes none), renamed,
    labelled for the owner and owned by it."""
    plain = cluster.model_copy(
        update={"spec": cluster.spec.model_copy(update={"head_service_annotations": None})}
    )
    service = build_head_service(
        params=ServiceParams(cluster=plain, options=options or RenderOptions())
    )
    name = owner.metadata.name or ""
    meta = obj(service.get("metadata"))
    meta["name"] = owner_head_service_name(name)
    meta["namespace"] = namespace_of(owner)
    meta["labels"] = sorted_map(
        {
            LabelKey.ORIGINATED_FROM_CR_NAME: name,
            LabelKey.ORIGINATED_FROM_CRD: owner.kind,
            LabelKey.NODE_TYPE: NodeType.HEAD,
            LabelKey.IDENTIFIER: check_label(f"{name}-{NodeType.HEAD.value}"),
        }
    )
    meta["ownerReferences"] = [owner_reference(owner)]
    service["metadata"] = in_field_order(meta, META_FIELDS)
    return service


def build_rayjob_head_service(
    *, job: RayJob, cluster: RayCluster, options: RenderOptions | None = None
) -> JSONObject:
    """``<j>-head-svc``, pointing at the head of the RayJob's cluster, owned by the RayJob
    (KubeRay's BuildHeadServiceForRayJob)."""
    return _owner_head_service(owner=job, cluster=cluster, options=options)


def build_rayservice_head_service(
    *, service: RayService, cluster: RayCluster, options: RenderOptions | None = None
) -> JSONObject:
    """``<s>-head-svc``, pointing at the head of ``cluster``, owned by the RayService
    (BuildHeadServiceForRayService; the controller re-points it on promotion)."""
    return _owner_head_service(owner=service, cluster=cluster, options=options)


def _rayservice_serve_service(
    service: RayService, cluster: RayCluster, *, per_cluster: bool, owner: Owner
) -> JSONObject:
    """KubeRay's BuildServeService for a RayService. ``per_cluster`` (what incremental
    mode does) names and labels it after the cluster and ignores ``serveService``."""
    base = cluster_name(cluster) if per_cluster else service.metadata.name or ""
    labels: dict[str, str] = {
        LabelKey.ORIGINATED_FROM_CR_NAME: base,
        LabelKey.ORIGINATED_FROM_CRD: "RayService",
        LabelKey.SERVE: serve_service_label(base),
    }
    selector: dict[str, str] = {LabelKey.CLUSTER: cluster_name(cluster), LabelKey.SERVE: "true"}
    # The RayService's own spec, not the cluster's, gives the type (as in KubeRay).
    service_type = service.spec.ray_cluster_config.head_group_spec.service_type or ""
    ports = sorted(serving_ports(cluster).items())
    custom = service.spec.serve_service
    if custom is not None and not per_cluster:
        return _custom_serve_service(service, custom, base, labels, selector, ports, owner)
    if not ports:
        raise _no_serve_port(cluster_name(cluster))
    spec: JSONObject = {
        "ports": [{"name": n, "port": p} for n, p in ports],
        "selector": sorted_map(selector),
    }
    if service_type:
        spec["type"] = service_type
    meta = object_meta(
        name=serve_service_name(base), namespace=namespace_of(service), labels=labels, owner=owner
    )
    return _service(meta, spec)


def _custom_serve_service(
    service: RayService,
    custom: JSONObject,
    base: str,
    labels: dict[str, str],
    selector: dict[str, str],
    ports: list[tuple[str, int]],
    owner: Owner,
) -> JSONObject:
    """The user's ``serveService`` with the selector forced, our labels over theirs, each
    detected serve port replaced by the user's port of that name if there is one (their
    own ports kept as they are when none is detected), name/type filled in where empty."""
    result = deep_copy(custom)
    meta = child(result, "metadata")
    spec = child(result, "spec")
    spec["selector"] = sorted_map(selector)
    if ports:
        user_ports = {text(port.get("name")): port for port in objects(spec.get("ports"))}
        spec["ports"] = [user_ports.get(n, {"name": n, "port": p}) for n, p in ports]
    meta["labels"] = sorted_map({**string_map(meta.get("labels")), **labels})
    meta["name"] = text(meta.get("name")) or serve_service_name(base)
    meta["namespace"] = namespace_of(service)
    service_type = service.spec.ray_cluster_config.head_group_spec.service_type
    if not text(spec.get("type")) and service_type:
        spec["type"] = service_type
    meta["ownerReferences"] = [owner_reference(owner)]
    result["metadata"] = in_field_order(meta, META_FIELDS)
    result["spec"] = in_field_order(spec, _SERVICE_SPEC_FIELDS)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        **{k: v for k, v in result.items() if k not in ("apiVersion", "kind")},
    }


def build_rayservice_serve_service(
    *, service: RayService, cluster: RayCluster, options: RenderOptions | None = None
) -> JSONObject:
    """The serve Service the RayService owns, selecting ``cluster``'s pods that pass the
    Serve proxy check (``ray.io/serve=true``): ``<s>-serve-svc`` or the user's
    ``serveService``. With an incremental upgrade enabled KubeRay builds the per-cluster
    ``<cluster>-serve-svc`` here instead (see ``build_cluster_serve_service``); the
    controller then finds that one already made and leaves it as it is."""
    gates = (options or RenderOptions()).feature_gates
    per_cluster = incremental_upgrade_enabled(service, gates)
    return _rayservice_serve_service(service, cluster, per_cluster=per_cluster, owner=service)


def build_cluster_serve_service(
    *, service: RayService, cluster: RayCluster, options: RenderOptions | None = None
) -> JSONObject:
    """``<cluster>-serve-svc`` of an incremental upgrade: one per cluster, the HTTPRoute's
    backend, owned by that cluster so it goes with it. ``serveService`` is not used."""
    del options  # the same whatever the settings; kept for a uniform call
    return _rayservice_serve_service(service, cluster, per_cluster=True, owner=cluster)
