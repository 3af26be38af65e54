"""The Gateway API objects of a RayService's incremental upgrade, and their readiness.

``<s>-gateway`` is the one entry point for serve traffic while clusters are swapped;
``<s>-httproute`` splits it between the active and the pending cluster's
``<cluster>-serve-svc`` by weight, stepped by the controller every ``intervalSeconds``.
The shapes, the equality checks the controller updates by, and the readiness rules are
KubeRay's (createGateway, createHTTPRoute, IsGatewayEqual, IsHTTPRouteEqual,
IsGatewayReady, IsHTTPRouteReady).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from operator_runtime.api import JSONObject, JSONValue, RayCluster, RayService
from operator_runtime.render._json import obj, objects, text
from operator_runtime.render.metadata import owner_reference
from operator_runtime.render.names import namespace_of
from operator_runtime.render.pods import RenderError

GATEWAY_API_VERSION: Final = "gateway.networking.k8s.io/v1"
LISTENER_NAME: Final = "http"
LISTENER_PORT: Final = 80
DEFAULT_SERVE_PORT: Final = 8000

Backend = tuple[str, int] | tuple[str, int, int]
"""``(serve Service name, weight)``, or ``(name, weight, port)`` when the clusters'
serve ports differ (KubeRay takes each backend's port from its own cluster)."""


def rayservice_gateway_name(service: RayService) -> str:
    return f"{service.metadata.name or ''}-gateway"


def rayservice_httproute_name(service: RayService) -> str:
    return f"{service.metadata.name or ''}-httproute"


def cluster_serve_port(cluster: RayCluster | None) -> int:
    """KubeRay's GetServePort: the head (first) container's port named ``serve``, else
    8000; only that exact name (a ``serve-grpc`` port is not the HTTP route's)."""
    if cluster is None:
        return DEFAULT_SERVE_PORT
    containers = objects(obj(cluster.spec.head_group_spec.template.get("spec")).get("containers"))
    if not containers:
        return DEFAULT_SERVE_PORT
    for port in objects(containers[0].get("ports")):
        number = port.get("containerPort")
        if port.get("name") == "serve" and isinstance(number, int):
            return number
    return DEFAULT_SERVE_PORT


def build_gateway(*, service: RayService) -> JSONObject:
    """``<s>-gateway``: the class from ``clusterUpgradeOptions.gatewayClassName``, one
    plain HTTP listener on port 80, owned by the RayService. Raises ``RenderError``
    without ``clusterUpgradeOptions`` (KubeRay fails the pass the same way)."""
    strategy = service.spec.upgrade_strategy
    options = strategy.cluster_upgrade_options if strategy is not None else None
    if options is None:
        raise RenderError(
            "spec.upgradeStrategy.clusterUpgradeOptions: required for the Gateway of an "
            "incremental upgrade"
        )
    return {
        "apiVersion": GATEWAY_API_VERSION,
        "kind": "Gateway",
        "metadata": {
            "name": rayservice_gateway_name(service),
            "namespace": namespace_of(service),
            "ownerReferences": [owner_reference(service)],
        },
        "spec": {
            "gatewayClassName": options.gateway_class_name,
            "listeners": [{"name": LISTENER_NAME, "port": LISTENER_PORT, "protocol": "HTTP"}],
        },
    }


def build_httproute(
    *, service: RayService, backends: Sequence[Backend], serve_port: int = DEFAULT_SERVE_PORT
) -> JSONObject:
    """``<s>-httproute``: attached to ``<s>-gateway``, one rule for every path (prefix
    ``/``) sending each backend its weight. Backends come in KubeRay's order: the active
    cluster's serve Service first, then the pending one's if there is one."""
    namespace = namespace_of(service)
    refs: list[JSONValue] = []
    for backend in backends:
        port = backend[2] if len(backend) == 3 else serve_port
        refs.append(
            {"name": backend[0], "namespace": namespace, "port": port, "weight": backend[1]}
        )
    return {
        "apiVersion": GATEWAY_API_VERSION,
        "kind": "HTTPRoute",
        "metadata": {
            "name": rayservice_httproute_name(service),
            "namespace": namespace,
            "ownerReferences": [owner_reference(service)],
        },
        "spec": {
            "parentRefs": [{"name": rayservice_gateway_name(service), "namespace": namespace}],
            "rules": [
                {
                    "matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                    "backendRefs": refs,
                }
            ],
        },
    }


def _condition_true(conditions: JSONValue | None, type_: str) -> bool:
    """``meta.IsStatusConditionTrue``."""
    return any(
        item.get("type") == type_ and item.get("status") == "True" for item in objects(conditions)
    )


def gateway_ready(gateway: JSONObject) -> bool:
    """The gateway implementation has accepted the Gateway and programmed its data plane
    (conditions ``Accepted`` and ``Programmed`` both True)."""
    conditions = obj(gateway.get("status")).get("conditions")
    return _condition_true(conditions, "Accepted") and _condition_true(conditions, "Programmed")


def httproute_ready(
    route: JSONObject, gateway_name: str, gateway_namespace: str | None = None
) -> bool:
    """Some parent status for this Gateway has ``Accepted`` and ``ResolvedRefs`` True.
    A parentRef naming another namespace does not count; ``gateway_namespace`` defaults
    to the route's own (where the controller puts both)."""
    namespace = gateway_namespace
    if namespace is None:
        namespace = text(obj(route.get("metadata")).get("namespace"))
    for parent in objects(obj(route.get("status")).get("parents")):
        ref = obj(parent.get("parentRef"))
        if text(ref.get("name")) != gateway_name:
            continue
        ref_namespace = ref.get("namespace")
        if ref_namespace is not None and ref_namespace != namespace:
            continue
        conditions = parent.get("conditions")
        if _condition_true(conditions, "Accepted") and _condition_true(conditions, "ResolvedRefs"):
            return True
    return False


def gateway_equal(existing: JSONObject, desired: JSONObject) -> bool:
    """IsGatewayEqual: only what the controller sets (class; each listener's name,
    protocol and port) is compared, so a gateway controller's defaults cause no update."""
    old, new = obj(existing.get("spec")), obj(desired.get("spec"))
    if text(old.get("gatewayClassName")) != text(new.get("gatewayClassName")):
        return False
    old_listeners, new_listeners = objects(old.get("listeners")), objects(new.get("listeners"))
    if len(old_listeners) != len(new_listeners):
        return False
    return all(
        (a.get("name"), a.get("protocol"), a.get("port"))
        == (b.get("name"), b.get("protocol"), b.get("port"))
        for a, b in zip(old_listeners, new_listeners, strict=True)
    )


def _list_or_empty(value: JSONValue | None) -> list[JSONValue]:
    return value if isinstance(value, list) else []


def httproute_equal(existing: JSONObject, desired: JSONObject) -> bool:
    """IsHTTPRouteEqual: hostnames, parentRefs (name, namespace), each rule's matches
    and filters, and each backendRef's name, namespace, weight (absent = 1) and port."""
    old, new = obj(existing.get("spec")), obj(desired.get("spec"))
    if _list_or_empty(old.get("hostnames")) != _list_or_empty(new.get("hostnames")):
        return False
    old_parents, new_parents = objects(old.get("parentRefs")), objects(new.get("parentRefs"))
    if len(old_parents) != len(new_parents):
        return False
    for a, b in zip(old_parents, new_parents, strict=True):
        if (text(a.get("name")), text(a.get("namespace"))) != (
            text(b.get("name")),
            text(b.get("namespace")),
        ):
            return False
    old_rules, new_rules = objects(old.get("rules")), objects(new.get("rules"))
    if len(old_rules) != len(new_rules):
        return False
    for a, b in zip(old_rules, new_rules, strict=True):
        if _list_or_empty(a.get("matches")) != _list_or_empty(b.get("matches")):
            return False
        if _list_or_empty(a.get("filters")) != _list_or_empty(b.get("filters")):
            return False
        old_refs, new_refs = objects(a.get("backendRefs")), objects(b.get("backendRefs"))
        if len(old_refs) != len(new_refs):
            return False
        for x, y in zip(old_refs, new_refs, strict=True):
            if _backend_key(x) != _backend_key(y):
                return False
    return True


def _backend_key(ref: JSONObject) -> tuple[str, str, JSONValue, JSONValue]:
    weight = ref.get("weight")
    port = ref.get("port")
    return (
        text(ref.get("name")),
        text(ref.get("namespace")),
        1 if weight is None else weight,
        0 if port is None else port,
    )
