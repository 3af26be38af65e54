"""``RayCluster``: a ray.io/v1 RayCluster, waited for until ``status.state`` is ``ready``."""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import pulumi

from operator_runtime import api
from operator_runtime.api.annotations import AnnotationKey
from operator_runtime.render.names import head_service_name, serve_service_name
from operator_runtime.render.services import DEFAULT_PORTS, service_ports

from . import _workload as w
from ._args import aliased, build_args
from ._inputs import object_ref
from .edges import Backend, GatewayEdgeArgs, IngressEdgeArgs, check_edges, create_edges
from .status import RayClusterStatus

__all__ = ["RayCluster", "RayClusterArgs"]

TYPE_TOKEN: Final = "ray:index:RayCluster"
OLD_TYPE_TOKEN: Final = "pulumi-ray:index:RayCluster"
"""The token before the package was named ``ray``; an alias keeps such stacks' URNs."""

RULES: Final = w.KindRules(
    kind="RayCluster",
    model=api.RayCluster,
    spec_model=api.RayClusterSpec,
    cluster_path=(),
    wait_for="jsonpath={.status.state}=ready",
    wait_for_suspended="jsonpath={.status.state}=suspended",
    wait_for_queued='jsonpath={$[?@.state=="ready" || @.state=="suspended"]}',
    is_suspended=lambda status: status.get("state") == "suspended",
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


@dataclass(frozen=True)
class RayClusterArgs:
    """The arguments of a ``RayCluster``."""

    spec: pulumi.Input[Mapping[str, Any]] | None = None
    """KubeRay's RayClusterSpec as in a YAML manifest (camelCase; snake_case and a
    ``RayClusterSpec`` model work in Python), checked by the operator's own rules."""
    name: pulumi.Input[str] | None = None
    """metadata.name; the component's name when None."""
    namespace: pulumi.Input[str] | None = None
    """metadata.namespace; the provider's default namespace when None."""
    labels: pulumi.Input[Mapping[str, pulumi.Input[str]]] | None = None
    annotations: pulumi.Input[Mapping[str, pulumi.Input[str]]] | None = None
    wait_for_ready: bool | None = True
    """Wait until ``status.state`` is ``ready`` (``suspended`` for a suspended cluster;
    either, whichever comes first, with ``queue_name``); True when None."""
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
    """``spec.suspend``: no pods while True (the operator deletes them). Refused with
    ``queue_name`` (Kueue sets it then)."""
    dashboard_ingress: IngressEdgeArgs | None = None
    """An Ingress in front of the dashboard."""
    dashboard_gateway: GatewayEdgeArgs | None = None
    """A Gateway API HTTPRoute (and Gateway) in front of the dashboard."""


_NO_ARGS: Final = RayClusterArgs()


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
    Put the ``RayOperator`` in ``opts.depends_on`` so ``pulumi destroy`` deletes the
    cluster while the operator still runs (and the spec is checked with its gates).
    """

    name: pulumi.Output[str]
    """metadata.name of the RayCluster."""
    namespace: pulumi.Output[str]
    head_service_name: pulumi.Output[str]
    dashboard_url: pulumi.Output[str]
    """``http://<head service>.<namespace>.svc.<cluster domain>:8265``."""
    serve_url: pulumi.Output[str | None]
    """The serve Service's URL when ``ray.io/enable-serve-service`` is "true", else None."""
    status: pulumi.Output[RayClusterStatus]
    """The RayCluster's ``status`` as the provider last read it: wire
    (camelCase) keys, ``{}`` until the operator writes one."""

    def __init__(
        self,
        resource_name: str,
        args: RayClusterArgs = _NO_ARGS,
        opts: pulumi.ResourceOptions | None = None,
        **fields: object,
    ) -> None:
        """``args``, or its fields as keyword arguments, and the spec's fields too
        (``RayCluster("demo", namespace="team-a", head_group_spec=...)``)."""
        given, spec_fields = build_args(RayClusterArgs, args, fields, extra_fields=True)
        common = w.WorkloadArgs.of(given, opts)
        ref = object_ref(
            RULES.kind, given.namespace, common.name if common.name is not None else resource_name
        )
        check_edges(ref, "dashboard", given.dashboard_ingress, given.dashboard_gateway)
        plan = w.plan_workload(
            RULES, common, resource_name, w.spec_argument(RULES, given.spec, spec_fields, ref)
        )
        super().__init__(TYPE_TOKEN, resource_name, None, aliased(opts, OLD_TYPE_TOKEN))

        cr = w.create_custom_resource(self, resource_name, RULES, plan, opts)
        self.custom_resource: w.RayObjectResource = cr
        """The ray.io/v1 object (a Python attribute, not an output of the package)."""
        cluster_domain = common.cluster_domain
        self.namespace = w.namespace_of(common, cr)
        self.name = w.derived(cr, plan, lambda c: c.metadata.name)
        self.head_service_name = w.derived(cr, plan, head_service_name)
        ns = self.namespace
        self.dashboard_url = w.derived(
            cr, plan, lambda c: ns.apply(lambda n: dashboard_url(c, n, cluster_domain)), ns
        )
        self.serve_url = w.derived(
            cr, plan, lambda c: ns.apply(lambda n: serve_url(c, n, cluster_domain)), ns
        )
        self.status = w.status_of(cr, RayClusterStatus)
        ports = w.derived(cr, plan, service_ports)
        create_edges(
            self,
            resource_name,
            "dashboard",
            Backend(
                namespace=self.namespace,
                object_name=self.name,
                service_name=self.head_service_name,
                port=ports.apply(lambda p: p.get("dashboard", DEFAULT_PORTS["dashboard"])),
            ),
            ingress=given.dashboard_ingress,
            gateway=given.dashboard_gateway,
            custom_resource=cr,
        )
        w.report_queued(self, RULES, common, cr)
        self.register_outputs(
            {
                "name": self.name,
                "namespace": self.namespace,
                "head_service_name": self.head_service_name,
                "dashboard_url": self.dashboard_url,
                "serve_url": self.serve_url,
                "status": self.status,
            }
        )
