"""``RayCluster``: a ray.io/v1 RayCluster, waited for until ``status.state`` is ``ready``."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Final

import pulumi

from components import _workload as w
from components._inputs import object_ref
from components.edges import Backend, GatewayEdgeArgs, IngressEdgeArgs, check_edges, create_edges
from operator_runtime import api
from operator_runtime.api.annotations import AnnotationKey
from operator_runtime.render.names import head_service_name, serve_service_name
from operator_runtime.render.services import DEFAULT_PORTS, service_ports

__all__ = ["RayCluster"]

TYPE_TOKEN: Final = "pulumi-ray:index:RayCluster"

RULES: Final = w.KindRules(
    kind="RayCluster",
    model=api.RayCluster,
    spec_model=api.RayClusterSpec,
    cluster_path=(),
    wait_for="jsonpath={.status.state}=ready",
    wait_for_suspended="jsonpath={.status.state}=suspended",
)


def dashboard_url(cluster: api.RayCluster, namespace: str, domain: str) -> str:
    port = service_ports(cluster).get("dashboard", DEFAULT_PORTS["dashboard"])
    return f"http://{head_service_name(cluster)}.{namespace}.svc.{domain}:{port}"


def serve_url(cluster: api.RayCluster, namespace: str, domain: str) -> str | None:
    """The serve Service only exists when the cluster asks for it by annotation."""
    annotations = cluster.metadata.annotations or {}
    if annotations.get(AnnotationKey.ENABLE_SERVE_SERVICE) != "true":
        return None
    port = service_ports(cluster).get("serve", DEFAULT_PORTS["serve"])
    name = serve_service_name(cluster.metadata.name or "")
    return f"http://{name}.{namespace}.svc.{domain}:{port}"


class RayCluster(pulumi.ComponentResource):
    """A Ray cluster: one ray.io/v1 RayCluster, plus an optional Ingress or Gateway for
    its dashboard.

    The spec is a ``RayClusterSpec``, a dict (snake_case or camelCase, as in a KubeRay
    YAML) or keyword arguments, with ``pulumi.Input`` values anywhere. It is checked by
    the operator's own rules at program time, or as soon as its Outputs resolve.

    Replicas: with ``enable_in_tree_autoscaling`` the Ray autoscaler owns each group's
    ``replicas`` and ``scaleStrategy.workersToDelete``; they are left out of what Pulumi
    applies (a group starts at ``minReplicas``), so ``pulumi up`` never resets the
    autoscaler and never conflicts with it. Without autoscaling Pulumi owns ``replicas``
    and applies with ``pulumi.com/patchForce``, so a hand change is put back.

    ``pulumi up`` waits until ``status.state`` is ``ready`` (``suspended`` for a cluster
    with ``suspend: true``; ``wait_for_ready=False`` skips it; ``timeout`` bounds it).
    Pass the ``RayOperator`` as ``operator`` so ``pulumi destroy`` deletes the cluster
    while the operator still runs.
    """

    resource_name: pulumi.Output[str]
    """metadata.name of the RayCluster."""
    namespace: pulumi.Output[str]
    head_service_name: pulumi.Output[str]
    dashboard_url: pulumi.Output[str]
    """``http://<head service>.<namespace>.svc.<cluster domain>:8265``."""
    serve_url: pulumi.Output[str | None]
    """The serve Service's URL when ``ray.io/enable-serve-service`` is "true", else None."""
    status: pulumi.Output[Any]
    """The RayCluster's ``status`` as the provider last read it."""
    custom_resource: w.RayObjectResource

    def __init__(
        self,
        resource_name: str,
        spec: pulumi.Input[api.RayClusterSpec | Mapping[str, Any]] | None = None,
        *,
        name: pulumi.Input[str] | None = None,
        namespace: pulumi.Input[str] | None = None,
        labels: pulumi.Input[Mapping[str, pulumi.Input[str]]] | None = None,
        annotations: pulumi.Input[Mapping[str, pulumi.Input[str]]] | None = None,
        operator: pulumi.Resource | None = None,
        wait_for_ready: bool = True,
        timeout: float | str | datetime.timedelta | None = None,
        provider: pulumi.ProviderResource | None = None,
        feature_gates: api.FeatureGates | str | None = None,
        cluster_domain: str = "cluster.local",
        dashboard_ingress: IngressEdgeArgs | None = None,
        dashboard_gateway: GatewayEdgeArgs | None = None,
        opts: pulumi.ResourceOptions | None = None,
        **spec_fields: object,
    ) -> None:
        args = w.WorkloadArgs(
            name, namespace, labels, annotations, operator, wait_for_ready, timeout, provider,
            feature_gates, cluster_domain,
        )  # fmt: skip
        ref = object_ref(RULES.kind, namespace, name if name is not None else resource_name)
        check_edges(ref, "dashboard", dashboard_ingress, dashboard_gateway)
        plan = w.plan_workload(
            RULES, args, resource_name, w.spec_argument(RULES, spec, spec_fields, ref)
        )
        super().__init__(TYPE_TOKEN, resource_name, None, opts)

        cr = w.create_custom_resource(self, resource_name, RULES, args, plan, opts)
        self.custom_resource = cr
        self.namespace = w.namespace_of(args, cr)
        self.resource_name = w.derived(cr, plan, lambda c: c.metadata.name)
        self.head_service_name = w.derived(cr, plan, head_service_name)
        ns = self.namespace
        self.dashboard_url = w.derived(
            cr, plan, lambda c: ns.apply(lambda n: dashboard_url(c, n, cluster_domain)), ns
        )
        self.serve_url = w.derived(
            cr, plan, lambda c: ns.apply(lambda n: serve_url(c, n, cluster_domain)), ns
        )
        self.status = cr.status
        ports = w.derived(cr, plan, service_ports)
        create_edges(
            self,
            resource_name,
            "dashboard",
            Backend(
                namespace=self.namespace,
                object_name=self.resource_name,
                service_name=self.head_service_name,
                port=ports.apply(lambda p: p.get("dashboard", DEFAULT_PORTS["dashboard"])),
            ),
            ingress=dashboard_ingress,
            gateway=dashboard_gateway,
            custom_resource=cr,
            provider=provider,
        )
        self.register_outputs(
            {
                "resource_name": self.resource_name,
                "namespace": self.namespace,
                "head_service_name": self.head_service_name,
                "dashboard_url": self.dashboard_url,
                "serve_url": self.serve_url,
                "status": self.status,
            }
        )
