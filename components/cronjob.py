"""``RayCronJob``: RayJobs created by the operator on a cron schedule."""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import pulumi

from operator_runtime import api

from . import _workload as w
from ._args import aliased, build_args
from ._inputs import object_ref
from .status import RayCronJobStatus

__all__ = ["RayCronJob", "RayCronJobArgs"]

TYPE_TOKEN: Final = "ray:index:RayCronJob"
OLD_TYPE_TOKEN: Final = "pulumi-ray:index:RayCronJob"
"""The token before the package was named ``ray``; an alias keeps such stacks' URNs."""

RULES: Final = w.KindRules(
    kind="RayCronJob",
    model=api.RayCronJob,
    spec_model=api.RayCronJobSpec,
    cluster_path=("jobTemplate", "rayClusterSpec"),
    # Nothing to wait for: the object only holds a schedule; its RayJobs come later.
    wait_for=None,
)


@dataclass(frozen=True)
class RayCronJobArgs:
    """The arguments of a ``RayCronJob``."""

    spec: pulumi.Input[Mapping[str, Any]] | None = None
    """KubeRay's RayCronJobSpec as in a YAML manifest (camelCase; snake_case and a
    ``RayCronJobSpec`` model work in Python), checked by the operator's own rules."""
    name: pulumi.Input[str] | None = None
    """metadata.name; the component's name when None."""
    namespace: pulumi.Input[str] | None = None
    """metadata.namespace; the provider's default namespace when None."""
    labels: pulumi.Input[Mapping[str, pulumi.Input[str]]] | None = None
    annotations: pulumi.Input[Mapping[str, pulumi.Input[str]]] | None = None
    feature_gates: str | None = None
    """The operator's ``--feature-gates`` (``RayCronJob=true``) to validate with; else
    the gates of a ``RayOperator`` in ``opts.depends_on``, else the defaults."""
    suspend: bool | None = None
    """``spec.suspend``: create no more RayJobs while True (those running go on). No
    ``queue_name`` here: KubeRay gives the RayJobs it creates none of the RayCronJob's
    labels, so Kueue's label would not reach them."""


_NO_ARGS: Final = RayCronJobArgs()


class RayCronJob(pulumi.ComponentResource):
    """A ray.io/v1 RayCronJob: the operator creates a RayJob from ``job_template`` at each
    time of ``schedule`` (in ``time_zone``). The operator needs the ``RayCronJob``
    feature gate.

    The RayJobs it creates belong to the operator, not to Pulumi, so a ``DeleteSelf``
    deletion policy in the template is fine here (unlike on ``RayJob``). Replicas in the
    template's cluster follow the rule of ``RayCluster``. ``pulumi up`` does not wait:
    there is no readiness to wait for.
    """

    name: pulumi.Output[str]
    namespace: pulumi.Output[str]
    status: pulumi.Output[RayCronJobStatus]
    """The RayCronJob's ``status`` as the provider last read it: wire (camelCase) keys,
    ``lastScheduleTime`` once a RayJob was created, ``{}`` until then."""

    def __init__(
        self,
        resource_name: str,
        args: RayCronJobArgs = _NO_ARGS,
        opts: pulumi.ResourceOptions | None = None,
        **fields: object,
    ) -> None:
        """``args``, or its fields and the spec's fields as keyword arguments."""
        given, spec_fields = build_args(RayCronJobArgs, args, fields, extra_fields=True)
        common = w.WorkloadArgs.of(given, opts)
        ref = object_ref(
            RULES.kind, given.namespace, common.name if common.name is not None else resource_name
        )
        plan = w.plan_workload(
            RULES, common, resource_name, w.spec_argument(RULES, given.spec, spec_fields, ref)
        )
        super().__init__(TYPE_TOKEN, resource_name, None, aliased(opts, OLD_TYPE_TOKEN))

        cr = w.create_custom_resource(self, resource_name, RULES, plan, opts)
        self.custom_resource: w.RayObjectResource = cr
        """The ray.io/v1 object (a Python attribute, not an output of the package)."""
        self.namespace = w.namespace_of(common, cr)
        self.name = w.derived(cr, plan, lambda c: c.metadata.name)
        self.status = w.status_of(cr, RayCronJobStatus)
        self.register_outputs(
            {
                "name": self.name,
                "namespace": self.namespace,
                "status": self.status,
            }
        )
