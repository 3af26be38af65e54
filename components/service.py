"""``RayService``: Ray Serve applications on clusters the operator replaces without
downtime, waited for until the ``Ready`` condition holds."""

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import pulumi

from operator_runtime import api
from operator_runtime.api.rayservice import INCREMENTAL_UPGRADE
from operator_runtime.render.names import serve_service_name as default_serve_service_name
from operator_runtime.render.services import DEFAULT_PORTS, service_ports

from . import _workload as w
from ._args import aliased, build_args
from ._inputs import RayInputError, object_ref
from .edges import Backend, GatewayEdgeArgs, IngressEdgeArgs, check_edges, create_edges
from .status import RayServiceStatuses

__all__ = ["RayService", "RayServiceArgs"]

TYPE_TOKEN: Final = "ray:index:RayService"
OLD_TYPE_TOKEN: Final = "pulumi-ray:index:RayService"
"""The token before the package was named ``ray``; an alias keeps such stacks' URNs."""

RULES: Final = w.KindRules(
    kind="RayService",
    model=api.RayService,
    spec_model=api.RayServiceSpec,
    cluster_path=("rayClusterConfig",),
    wait_for="condition=Ready",
    wait_for_suspended="condition=Suspended",
    wait_for_queued=(
        'jsonpath={.status.conditions[?(@.type=="Ready" || @.type=="Suspended")'
        ' && @.status=="True"]}'
    ),
    is_suspended=lambda status: any(
        c.get("type") == "Suspended" and c.get("status") == "True"
        for c in status.get("conditions") or ()
    ),
)


def _ports(service: api.RayService) -> dict[str, int]:
    """The head ports of the service's clusters (they all share one cluster spec)."""
    cluster = api.RayCluster(
        metadata=api.ObjectMeta(name=service.metadata.name), spec=service.spec.ray_cluster_config
    )
    return service_ports(cluster)


def head_service_name(service: api.RayService) -> str:
    """The operator keeps ``<name>-head-svc`` pointed at the active cluster's head."""
    return f"{service.metadata.name}-head-svc"


def serve_service_name(service: api.RayService) -> str:
    custom = (service.spec.serve_service or {}).get("metadata")
    name = custom.get("name") if isinstance(custom, Mapping) else None
    return name if isinstance(name, str) and name else default_serve_service_name(
        service.metadata.name or ""
    )  # fmt: skip


def serve_port(service: api.RayService) -> int:
    return _ports(service).get("serve", DEFAULT_PORTS["serve"])


def dashboard_url(service: api.RayService, namespace: str, domain: str) -> str:
    port = _ports(service).get("dashboard", DEFAULT_PORTS["dashboard"])
    return f"http://{head_service_name(service)}.{namespace}.svc.{domain}:{port}"


def serve_url(service: api.RayService, namespace: str, domain: str) -> str:
    return f"http://{serve_service_name(service)}.{namespace}.svc.{domain}:{serve_port(service)}"


def _refuse_edges_with_incremental_upgrade(edge: str | None) -> w.Check[api.RayService]:
    def check(service: api.RayService) -> None:
        strategy = service.spec.upgrade_strategy
        if edge is None or strategy is None or strategy.type != INCREMENTAL_UPGRADE:
            return
        raise RayInputError(
            object_ref("RayService", service.metadata.namespace, service.metadata.name),
            "spec.upgradeStrategy.type",
            f"{INCREMENTAL_UPGRADE} routes traffic through the Gateway and HTTPRoute the "
            f"operator creates; the {edge} asked for would bypass its traffic split",
            f"drop {edge}= and send traffic to the operator's Gateway, or use NewCluster",
            "RAYSERVICE_EDGE_WITH_INCREMENTAL_UPGRADE",
        )

    return check


@dataclass(frozen=True)
class RayServiceArgs:
    """The arguments of a ``RayService``."""

    spec: pulumi.Input[Mapping[str, Any]] | None = None
    """KubeRay's RayServiceSpec as in a YAML manifest (camelCase; snake_case and a
    ``RayServiceSpec`` model work in Python), checked by the operator's own rules."""
    name: pulumi.Input[str] | None = None
    """metadata.name; the component's name when None."""
    namespace: pulumi.Input[str] | None = None
    """metadata.namespace; the provider's default namespace when None."""
    labels: pulumi.Input[Mapping[str, pulumi.Input[str]]] | None = None
    annotations: pulumi.Input[Mapping[str, pulumi.Input[str]]] | None = None
    wait_for_ready: bool | None = True
    """Wait until the ``Ready`` condition holds (``Suspended`` with ``suspend``; either,
    whichever comes first, with ``queue_name``); True when None."""
    timeout: str | None = None
    """How long to wait, e.g. ``10m`` or ``1h30m``; the Kubernetes provider's default
    when None."""
    feature_gates: str | None = None
    """The operator's ``--feature-gates`` (``RayCronJob=true``) to validate with; else
    the gates of a ``RayOperator`` in ``opts.depends_on``, else the defaults."""
    cluster_domain: str | None = "cluster.local"
    """The cluster's DNS domain, for the URLs (``cluster.local`` when None)."""
    queue_name: str | None = None
    """The Kueue LocalQueue (in the object's namespace) that admits it: sets the
    ``kueue.x-k8s.io/queue-name`` label. Kueue then owns ``suspend``; see ``wait_for_ready``
    for what ``pulumi up`` waits for."""
    suspend: bool | None = None
    """``spec.suspend``: no clusters while True (the operator deletes them). Refused
    with ``queue_name`` (Kueue sets it then)."""
    serve_ingress: IngressEdgeArgs | None = None
    """An Ingress in front of the serve Service."""
    serve_gateway: GatewayEdgeArgs | None = None
    """A Gateway API HTTPRoute (and Gateway) in front of the serve Service."""


_NO_ARGS: Final = RayServiceArgs()


class RayService(pulumi.ComponentResource):
    """Ray Serve applications: a ray.io/v1 RayService, plus an optional Ingress or
    Gateway + HTTPRoute in front of its serve Service.

    The operator creates the clusters (their names are its own) and keeps
    ``<name>-head-svc`` and ``<name>-serve-svc`` pointed at the active one, so those are
    the addresses this component returns. Replicas in ``ray_cluster_config`` follow the
    rule of ``RayCluster``: left out when the cluster autoscales, otherwise Pulumi's, with
    ``pulumi.com/patchForce``. ``pulumi up`` waits for the ``Ready`` condition.

    With ``upgradeStrategy.type: NewClusterWithIncrementalUpgrade`` the operator itself
    creates the Gateway and the weighted HTTPRoute; an edge of ours would bypass the
    traffic split, so it is refused.
    """

    name: pulumi.Output[str]
    namespace: pulumi.Output[str]
    head_service_name: pulumi.Output[str]
    dashboard_url: pulumi.Output[str]
    serve_service_name: pulumi.Output[str]
    serve_url: pulumi.Output[str]
    """``http://<name>-serve-svc.<namespace>.svc.<cluster domain>:8000``."""
    status: pulumi.Output[RayServiceStatuses]
    """The RayService's ``status`` as the provider last read it: wire
    (camelCase) keys, ``{}`` until the operator writes one."""

    def __init__(
        self,
        resource_name: str,
        args: RayServiceArgs = _NO_ARGS,
        opts: pulumi.ResourceOptions | None = None,
        **fields: object,
    ) -> None:
        """``args``, or its fields and the spec's fields as keyword arguments."""
        given, spec_fields = build_args(RayServiceArgs, args, fields, extra_fields=True)
        common = w.WorkloadArgs.of(given, opts)
        ref = object_ref(
            RULES.kind, given.namespace, common.name if common.name is not None else resource_name
        )
        ingress, gateway = given.serve_ingress, given.serve_gateway
        check_edges(ref, "serve", ingress, gateway)
        edge = "serve_gateway" if gateway else "serve_ingress" if ingress else None
        rules = dataclasses.replace(RULES, checks=(_refuse_edges_with_incremental_upgrade(edge),))
        plan = w.plan_workload(
            rules, common, resource_name, w.spec_argument(rules, given.spec, spec_fields, ref)
        )
        super().__init__(TYPE_TOKEN, resource_name, None, aliased(opts, OLD_TYPE_TOKEN))

        cr = w.create_custom_resource(self, resource_name, rules, plan, opts)
        self.custom_resource: w.RayObjectResource = cr
        """The ray.io/v1 object (a Python attribute, not an output of the package)."""
        self.namespace = ns = w.namespace_of(common, cr)
        cluster_domain = common.cluster_domain
        self.name = w.derived(cr, plan, lambda s: s.metadata.name)
        self.head_service_name = w.derived(cr, plan, head_service_name)
        self.serve_service_name = w.derived(cr, plan, serve_service_name)
        self.dashboard_url = w.derived(
            cr, plan, lambda s: ns.apply(lambda n: dashboard_url(s, n, cluster_domain)), ns
        )
        self.serve_url = w.derived(
            cr, plan, lambda s: ns.apply(lambda n: serve_url(s, n, cluster_domain)), ns
        )
        self.status = w.status_of(cr, RayServiceStatuses)
        create_edges(
            self,
            resource_name,
            "serve",
            Backend(
                namespace=ns,
                object_name=self.name,
                service_name=self.serve_service_name,
                port=w.derived(cr, plan, serve_port),
            ),
            ingress=ingress,
            gateway=gateway,
            custom_resource=cr,
        )
        w.report_queued(self, rules, common, cr)
        self.register_outputs(
            {
                "name": self.name,
                "namespace": self.namespace,
                "head_service_name": self.head_service_name,
                "dashboard_url": self.dashboard_url,
                "serve_service_name": self.serve_service_name,
                "serve_url": self.serve_url,
                "status": self.status,
            }
        )
