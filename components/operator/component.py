"""``RayOperator``: the ray.io/v1 CRDs and the Python operator that reconciles them.

What it creates, each a child of the component (``parent=self``):

- a Namespace (optional), labelled to enforce the ``restricted`` Pod Security Standard,
  which the operator's pod meets;
- the four CRDs from ``operator_runtime/api/crds`` as typed CustomResourceDefinitions,
  applied server-side (the Kubernetes provider's default; they are too big for a
  client-side apply's last-applied annotation), kept on ``pulumi destroy`` by default;
- a ServiceAccount (or an existing one, by name) and its RBAC (``rbac.py``): a
  ClusterRole and binding, or a Role and binding per watched namespace; a
  leader-election Role in its own namespace;
- the Deployment, the ConfigMap of ``operator_config`` (optional), the metrics Service
  and, with replicas > 1, a PodDisruptionBudget (``deployment.py``); optionally a
  ServiceMonitor and a PrometheusRule (``monitoring.py``) and the Grafana boards'
  ConfigMaps (``grafana.py``).

Workload components take it in ``opts.depends_on``, so they wait for it on ``up`` and are
deleted while it still runs on ``destroy``; they read its ``feature_gates`` to validate
with the gates the operator really has.
"""

from typing import Any, Final

import pulumi
import pulumi_kubernetes as k8s

from operator_runtime.api import FeatureGates, crds

from .._args import aliased, build_args
from .args import Plan, RayOperatorArgs, name_of
from .checks import settle
from .deployment import (
    create_config_map,
    create_deployment,
    create_disruption_budget,
    create_metrics_service,
)
from .grafana import create_dashboards
from .monitoring import create_prometheus_rule, create_service_monitor
from .rbac import create_rbac

__all__ = ["TYPE_TOKEN", "RayOperator", "load_crds"]

TYPE_TOKEN: Final = "ray:index:RayOperator"
OLD_TYPE_TOKEN: Final = "pulumi-ray:index:RayOperator"
"""The token before the package was named ``ray``; an alias keeps such stacks' URNs."""
_NO_ARGS: Final = RayOperatorArgs()
_POD_SECURITY: Final = {"pod-security.kubernetes.io/enforce": "restricted"}


def load_crds() -> tuple[dict[str, Any], ...]:
    """The committed CRD manifests, in file order: the ones the operator is tested with.
    Parsed once per process; callers must not modify them."""
    return crds.load_bundle()


class RayOperator(pulumi.ComponentResource):
    """The ray.io/v1 operator: CRDs, RBAC, Deployment, metrics, alerts, dashboards.

    ``RayOperator("ray", RayOperatorArgs(replicas=2, watch_namespaces=["team-a"]))``.
    Arguments are checked before anything is registered; a mistake raises
    ``RayInputError`` naming the argument and the fix.
    """

    namespace: pulumi.Output[str]
    """The operator's namespace (read back from the Namespace when this component made it)."""
    service_account_name: pulumi.Output[str]
    deployment_name: pulumi.Output[str]
    metrics_service_name: pulumi.Output[str]
    cluster_role_name: pulumi.Output[str | None]
    """None with namespaced RBAC."""
    role_names: pulumi.Output[dict[str, str]]
    """Watched namespace -> the operator's Role there; empty with cluster-scoped RBAC."""
    leader_election_role_name: pulumi.Output[str | None]
    """None with leader election off."""
    image: pulumi.Output[str]

    def __init__(
        self,
        resource_name: str,
        args: RayOperatorArgs = _NO_ARGS,
        opts: pulumi.ResourceOptions | None = None,
        **fields: object,
    ) -> None:
        """``args``, or its fields as keyword arguments (``RayOperator("ray", image=...)``)."""
        given, _ = build_args(RayOperatorArgs, args, fields)
        plan = settle(resource_name, given)
        super().__init__(TYPE_TOKEN, resource_name, None, aliased(opts, OLD_TYPE_TOKEN))
        # Python attributes, not outputs of the package (only annotated ones are).
        self.feature_gates: FeatureGates = plan.feature_gates
        """The gates the operator runs with (its defaults when none were given)."""
        self.watch_namespaces: tuple[str, ...] = plan.watch_namespaces
        """Empty: every namespace."""
        self.namespace = self._namespace(plan)
        self.crds: list[k8s.apiextensions.v1.CustomResourceDefinition] = self._crds(plan)
        """The CRDs this component installs (none with ``install_crds=False``)."""
        self.service_account_name = self._service_account(plan)
        rbac = create_rbac(self, plan, self.namespace, self.service_account_name)
        self.cluster_role_name = rbac.cluster_role_name
        self.role_names = rbac.role_names
        self.leader_election_role_name = rbac.leader_election_role_name
        config_map = create_config_map(self, plan, self.namespace)
        self.deployment: k8s.apps.v1.Deployment = create_deployment(
            self,
            plan,
            self.namespace,
            self.service_account_name,
            [*self.crds, *rbac.bindings, *([config_map] if config_map else [])],
        )
        self.deployment_name = name_of(self.deployment)
        self.image = pulumi.Output.from_input(plan.image)
        self.metrics_service_name = name_of(create_metrics_service(self, plan, self.namespace))
        create_disruption_budget(self, plan, self.namespace)
        if plan.service_monitor:
            create_service_monitor(self, plan, self.namespace)
        if plan.prometheus_rule:
            create_prometheus_rule(self, plan, self.namespace)
        if plan.grafana_dashboards:
            create_dashboards(self, plan, self.namespace)
        self.register_outputs(
            {
                "namespace": self.namespace,
                "service_account_name": self.service_account_name,
                "deployment_name": self.deployment_name,
                "metrics_service_name": self.metrics_service_name,
                "cluster_role_name": self.cluster_role_name,
                "role_names": self.role_names,
                "leader_election_role_name": self.leader_election_role_name,
                "image": self.image,
            }
        )

    def _namespace(self, plan: Plan) -> pulumi.Output[str]:
        if not plan.create_namespace:
            return pulumi.Output.from_input(plan.namespace)
        namespace = k8s.core.v1.Namespace(
            plan.resource_name,
            metadata=plan.metadata(plan.namespace, extra_labels=_POD_SECURITY),
            opts=plan.child(self),
        )
        return name_of(namespace)

    def _service_account(self, plan: Plan) -> pulumi.Output[str]:
        if not plan.create_service_account:
            # An existing account: RBAC is still granted to it, as KubeRay's chart does.
            return pulumi.Output.from_input(plan.service_account_name)
        account = k8s.core.v1.ServiceAccount(
            plan.resource_name,
            metadata=plan.metadata(
                plan.service_account_name,
                self.namespace,
                annotations=plan.service_account_annotations,
            ),
            opts=plan.child(self),
        )
        return name_of(account)

    def _crds(self, plan: Plan) -> list[k8s.apiextensions.v1.CustomResourceDefinition]:
        if not plan.install_crds:
            return []
        opts = pulumi.ResourceOptions.merge(
            plan.child(self), pulumi.ResourceOptions(retain_on_delete=plan.retain_crds_on_delete)
        )
        return [
            k8s.apiextensions.v1.CustomResourceDefinition(
                f"{plan.resource_name}-{crd['spec']['names']['plural']}",
                metadata=crd["metadata"],
                spec=crd["spec"],
                opts=opts,
            )
            for crd in load_crds()
        ]
