"""User-facing edges: an Ingress, or a Gateway with an HTTPRoute, in front of a Service the
operator creates (a RayCluster's dashboard, a RayService's serve endpoint).

They are ours, not the operator's: KubeRay's ``enableIngress`` covers only the dashboard
and only an Ingress, and a Gateway for a RayService exists only during incremental
upgrades. Each edge is a child of the workload component and depends on its custom
resource, so ``pulumi destroy`` removes the edge first and never leaves a route to a
Service that is gone.
"""

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

import pulumi
import pulumi_kubernetes as k8s

from ._inputs import RayInputError

__all__ = ["GATEWAY_API_VERSION", "GatewayEdgeArgs", "IngressEdgeArgs", "PathType", "create_edges"]

GATEWAY_API_VERSION: Final = "gateway.networking.k8s.io/v1"


class PathType(enum.StrEnum):
    """How an Ingress path matches (networking.k8s.io/v1 ``pathType``)."""

    PREFIX = "Prefix"
    EXACT = "Exact"
    IMPLEMENTATION_SPECIFIC = "ImplementationSpecific"


@dataclass(frozen=True)
class IngressEdgeArgs:
    """An Ingress (networking.k8s.io/v1) with one rule to the Service."""

    host: pulumi.Input[str] | None = None
    """Host to match; every host when None."""
    path: str | None = "/"
    """``/`` when None."""
    path_type: PathType | None = PathType.PREFIX
    ingress_class_name: pulumi.Input[str] | None = None
    tls_secret_name: pulumi.Input[str] | None = None
    """A Secret with the certificate for ``host``; TLS is off when None."""
    annotations: Mapping[str, pulumi.Input[str]] | None = None
    """Controller settings, e.g. ``nginx.ingress.kubernetes.io/rewrite-target``."""


@dataclass(frozen=True)
class GatewayEdgeArgs:
    """An HTTPRoute (gateway.networking.k8s.io/v1) to the Service, attached either to a
    Gateway of its own (``gateway_class_name``) or to an existing one (``gateway_name``)."""

    gateway_class_name: pulumi.Input[str] | None = None
    gateway_name: pulumi.Input[str] | None = None
    gateway_namespace: pulumi.Input[str] | None = None
    """Namespace of ``gateway_name``; the workload's namespace when None."""
    hostname: pulumi.Input[str] | None = None
    port: int | None = 80
    """Listener port of the Gateway this component creates (80 when None)."""
    path: str | None = "/"
    """``/`` when None."""


def check_edges(
    ref: str,
    field: str,
    ingress: IngressEdgeArgs | None,
    gateway: GatewayEdgeArgs | None,
) -> None:
    """Refuse edge arguments that cannot work, before anything is registered."""
    if ingress is not None and not (ingress.path or "/").startswith("/"):
        raise RayInputError(
            ref, f"{field}_ingress.path", f"{ingress.path!r} does not start with /",
            "give an absolute path such as /", "EDGE_INVALID_PATH",
        )  # fmt: skip
    if gateway is None:
        return
    if (gateway.gateway_class_name is None) == (gateway.gateway_name is None):
        raise RayInputError(
            ref, f"{field}_gateway", "needs exactly one of gateway_class_name and gateway_name",
            "gateway_class_name creates a Gateway; gateway_name attaches to an existing one",
            "EDGE_GATEWAY_CHOICE",
        )  # fmt: skip
    if not (gateway.path or "/").startswith("/"):
        raise RayInputError(
            ref, f"{field}_gateway.path", f"{gateway.path!r} does not start with /",
            "give an absolute path such as /", "EDGE_INVALID_PATH",
        )  # fmt: skip


@dataclass(frozen=True)
class Backend:
    """The Service an edge leads to."""

    namespace: pulumi.Input[str]
    object_name: pulumi.Input[str]
    """metadata.name of the custom resource; edge objects are named after it."""
    service_name: pulumi.Input[str]
    port: pulumi.Input[int]


def _name(base: pulumi.Input[str], suffix: str) -> pulumi.Output[str]:
    return pulumi.Output.from_input(base).apply(lambda name: f"{name}-{suffix}")


def _ingress(
    resource_name: str, purpose: str, backend: Backend, args: IngressEdgeArgs,
    opts: pulumi.ResourceOptions,
) -> k8s.networking.v1.Ingress:  # fmt: skip
    service = k8s.networking.v1.IngressServiceBackendArgs(
        name=backend.service_name,
        port=k8s.networking.v1.ServiceBackendPortArgs(number=backend.port),
    )
    path = k8s.networking.v1.HTTPIngressPathArgs(
        path=args.path or "/",
        path_type=args.path_type or PathType.PREFIX,
        backend=k8s.networking.v1.IngressBackendArgs(service=service),
    )
    rule = k8s.networking.v1.IngressRuleArgs(
        host=args.host, http=k8s.networking.v1.HTTPIngressRuleValueArgs(paths=[path])
    )
    tls = None
    if args.tls_secret_name is not None:
        hosts = [args.host] if args.host is not None else None
        tls = [k8s.networking.v1.IngressTLSArgs(hosts=hosts, secret_name=args.tls_secret_name)]
    return k8s.networking.v1.Ingress(
        f"{resource_name}-{purpose}",
        metadata=k8s.meta.v1.ObjectMetaArgs(
            name=_name(backend.object_name, purpose),
            namespace=backend.namespace,
            annotations=args.annotations,
        ),
        spec=k8s.networking.v1.IngressSpecArgs(
            ingress_class_name=args.ingress_class_name, rules=[rule], tls=tls
        ),
        opts=opts,
    )


def _gateway(
    resource_name: str, purpose: str, backend: Backend, args: GatewayEdgeArgs,
    opts: pulumi.ResourceOptions,
) -> list[pulumi.Resource]:  # fmt: skip
    created: list[pulumi.Resource] = []
    parent_ref: dict[str, pulumi.Input[str]]
    if args.gateway_class_name is not None:
        listener: dict[str, object] = {"name": "http", "port": args.port or 80, "protocol": "HTTP"}
        if args.hostname is not None:
            listener["hostname"] = args.hostname
        gateway = k8s.apiextensions.CustomResource(
            f"{resource_name}-{purpose}",
            api_version=GATEWAY_API_VERSION,
            kind="Gateway",
            metadata={"name": _name(backend.object_name, purpose), "namespace": backend.namespace},
            spec={"gatewayClassName": args.gateway_class_name, "listeners": [listener]},
            opts=opts,
        )
        created.append(gateway)
        parent_ref = {"name": _name(backend.object_name, purpose)}
    else:
        assert args.gateway_name is not None  # check_edges guarantees one of the two
        parent_ref = {"name": args.gateway_name}
        if args.gateway_namespace is not None:
            parent_ref["namespace"] = args.gateway_namespace
    route_spec: dict[str, object] = {
        "parentRefs": [parent_ref],
        "rules": [
            {
                "matches": [{"path": {"type": "PathPrefix", "value": args.path or "/"}}],
                "backendRefs": [{"name": backend.service_name, "port": backend.port}],
            }
        ],
    }
    if args.hostname is not None:
        route_spec["hostnames"] = [args.hostname]
    route_opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=created))
    created.append(
        k8s.apiextensions.CustomResource(
            f"{resource_name}-{purpose}",
            api_version=GATEWAY_API_VERSION,
            kind="HTTPRoute",
            metadata={"name": _name(backend.object_name, purpose), "namespace": backend.namespace},
            spec=route_spec,
            opts=route_opts,
        )
    )
    return created


def create_edges(
    parent: pulumi.Resource,
    resource_name: str,
    purpose: str,
    backend: Backend,
    *,
    ingress: IngressEdgeArgs | None,
    gateway: GatewayEdgeArgs | None,
    custom_resource: pulumi.Resource,
) -> list[pulumi.Resource]:
    """The Ingress and/or Gateway + HTTPRoute asked for, children of ``parent`` (whose
    provider they inherit)."""
    opts = pulumi.ResourceOptions(parent=parent, depends_on=[custom_resource])
    created: list[pulumi.Resource] = []
    if ingress is not None:
        created.append(_ingress(resource_name, purpose, backend, ingress, opts))
    if gateway is not None:
        created.extend(_gateway(resource_name, purpose, backend, gateway, opts))
    return created
