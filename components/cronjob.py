"""``RayCronJob``: RayJobs created by the operator on a cron schedule."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import pulumi

from components import _workload as w
from components._inputs import object_ref
from operator_runtime import api

__all__ = ["RayCronJob"]

TYPE_TOKEN: Final = "pulumi-ray:index:RayCronJob"

RULES: Final = w.KindRules(
    kind="RayCronJob",
    model=api.RayCronJob,
    spec_model=api.RayCronJobSpec,
    cluster_path=("jobTemplate", "rayClusterSpec"),
    # Nothing to wait for: the object only holds a schedule; its RayJobs come later.
    wait_for=None,
)


class RayCronJob(pulumi.ComponentResource):
    """A ray.io/v1 RayCronJob: the operator creates a RayJob from ``job_template`` at each
    time of ``schedule`` (in ``time_zone``). The operator needs the ``RayCronJob``
    feature gate.

    The RayJobs it creates belong to the operator, not to Pulumi, so a ``DeleteSelf``
    deletion policy in the template is fine here (unlike on ``RayJob``). Replicas in the
    template's cluster follow the rule of ``RayCluster``. ``pulumi up`` does not wait:
    there is no readiness to wait for.
    """

    resource_name: pulumi.Output[str]
    namespace: pulumi.Output[str]
    status: pulumi.Output[Any]
    """``status.lastScheduleTime`` once a RayJob was created."""
    custom_resource: w.RayObjectResource

    def __init__(
        self,
        resource_name: str,
        spec: pulumi.Input[api.RayCronJobSpec | Mapping[str, Any]] | None = None,
        *,
        name: pulumi.Input[str] | None = None,
        namespace: pulumi.Input[str] | None = None,
        labels: pulumi.Input[Mapping[str, pulumi.Input[str]]] | None = None,
        annotations: pulumi.Input[Mapping[str, pulumi.Input[str]]] | None = None,
        operator: pulumi.Resource | None = None,
        provider: pulumi.ProviderResource | None = None,
        feature_gates: api.FeatureGates | str | None = None,
        opts: pulumi.ResourceOptions | None = None,
        **spec_fields: object,
    ) -> None:
        args = w.WorkloadArgs(
            name=name, namespace=namespace, labels=labels, annotations=annotations,
            operator=operator, provider=provider, feature_gates=feature_gates,
        )  # fmt: skip
        ref = object_ref(RULES.kind, namespace, name if name is not None else resource_name)
        plan = w.plan_workload(
            RULES, args, resource_name, w.spec_argument(RULES, spec, spec_fields, ref)
        )
        super().__init__(TYPE_TOKEN, resource_name, None, opts)

        cr = w.create_custom_resource(self, resource_name, RULES, args, plan, opts)
        self.custom_resource = cr
        self.namespace = w.namespace_of(args, cr)
        self.resource_name = w.derived(cr, plan, lambda c: c.metadata.name)
        self.status = cr.status
        self.register_outputs(
            {
                "resource_name": self.resource_name,
                "namespace": self.namespace,
                "status": self.status,
            }
        )
