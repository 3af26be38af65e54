"""``RayJob``: one run of a Ray job, named after its spec so a new spec is a new run."""

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import pulumi

from operator_runtime import api
from operator_runtime.api.labels import LabelKey

# The operator's own limit, so the two can never disagree.
from operator_runtime.api.validation._names import MAX_RAYJOB_NAME

from . import _workload as w
from ._args import aliased, build_args
from ._inputs import RayInputError, has_outputs, object_ref, redact_secrets
from .status import RayJobStatus

__all__ = ["RayJob", "RayJobArgs"]

TYPE_TOKEN: Final = "ray:index:RayJob"
OLD_TYPE_TOKEN: Final = "pulumi-ray:index:RayJob"
"""The token before the package was named ``ray``; an alias keeps such stacks' URNs."""
DIGEST_LENGTH: Final = 8
"""Hex characters of the spec digest in metadata.name (after a ``-``)."""


def spec_digest(spec: object) -> str:
    """A short, stable digest of the applied spec: same spec, same digest, in every
    preview and update (keys sorted, no whitespace)."""
    text = json.dumps(spec, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:DIGEST_LENGTH]


def job_name(base: pulumi.Input[str], applied_spec: object) -> pulumi.Input[str]:
    """``<base>-<digest of the applied spec>``. Secret values take no part in the digest
    (see ``redact_secrets``), so the name never becomes a secret nor a hash of one."""
    if not has_outputs(base) and not has_outputs(applied_spec):
        return f"{base}-{spec_digest(applied_spec)}"
    digest = pulumi.Output.from_input(redact_secrets(applied_spec)).apply(spec_digest)
    return pulumi.Output.all(base, digest).apply(lambda parts: f"{parts[0]}-{parts[1]}")


def _refuse_long_name(job: api.RayJob) -> None:
    name = job.metadata.name or ""
    if len(name) > MAX_RAYJOB_NAME:
        limit = MAX_RAYJOB_NAME - DIGEST_LENGTH - 1
        raise RayInputError(
            object_ref("RayJob", job.metadata.namespace, name), "metadata.name",
            f"the name has {len(name)} characters with the -<spec digest> suffix",
            f"give a name of at most {limit} characters (name=)", "RAYJOB_NAME_TOO_LONG",
        )  # fmt: skip


def _refuse_delete_self(job: api.RayJob) -> None:
    strategy = job.spec.deletion_strategy
    if strategy is None:
        return
    paths: list[tuple[str, str | None]] = [
        (f"spec.deletionStrategy.deletionRules[{i}].policy", rule.policy)
        for i, rule in enumerate(strategy.deletion_rules or ())
    ]
    for wire_name, legacy in (
        ("onSuccess", strategy.on_success),
        ("onFailure", strategy.on_failure),
    ):
        if legacy is not None:
            paths.append((f"spec.deletionStrategy.{wire_name}.policy", legacy.policy))
    for path, policy in paths:
        if policy == "DeleteSelf":
            raise RayInputError(
                object_ref("RayJob", job.metadata.namespace, job.metadata.name), path,
                "DeleteSelf deletes the RayJob once it ends; the next `pulumi up --refresh` "
                "finds it gone and creates it again, which runs the job a second time",
                "use DeleteCluster or DeleteWorkers to free the cluster, and `pulumi destroy` "
                "(or remove the RayJob from the program) to delete the RayJob itself",
                "RAYJOB_DELETE_SELF_UNDER_PULUMI",
            )  # fmt: skip


RULES: Final = w.KindRules(
    kind="RayJob",
    model=api.RayJob,
    spec_model=api.RayJobSpec,
    cluster_path=("rayClusterSpec",),
    wait_for="jsonpath={.status.jobDeploymentStatus}=Complete",
    wait_for_suspended="jsonpath={.status.jobDeploymentStatus}=Suspended",
    wait_for_queued=(
        'jsonpath={$[?@.jobDeploymentStatus=="Complete" || @.jobDeploymentStatus=="Suspended"]}'
    ),
    is_suspended=lambda status: status.get("jobDeploymentStatus") == "Suspended",
    name_for=job_name,
    checks=(_refuse_long_name, _refuse_delete_self),
)


def _selected_cluster(job: api.RayJob) -> str | None:
    return (job.spec.cluster_selector or {}).get(LabelKey.CLUSTER)


def head_service_name(job: api.RayJob, status: Any) -> str | None:
    """The head Service of the cluster the job runs on: the selected one, else the one
    the operator generated and reported in ``status.rayClusterName``."""
    cluster = _selected_cluster(job) or (status or {}).get("rayClusterName")
    return f"{cluster}-head-svc" if cluster else None


def dashboard_url(job: api.RayJob, status: Any, namespace: str, domain: str) -> str | None:
    """The operator reports ``host:port`` in ``status.dashboardURL``; before it does, the
    selected cluster's address is known."""
    reported = (status or {}).get("dashboardURL")
    if reported:
        return f"http://{reported}"
    selected = _selected_cluster(job)
    return f"http://{selected}-head-svc.{namespace}.svc.{domain}:8265" if selected else None


@dataclass(frozen=True)
class RayJobArgs:
    """The arguments of a ``RayJob``."""

    spec: pulumi.Input[Mapping[str, Any]] | None = None
    """KubeRay's RayJobSpec as in a YAML manifest (camelCase; snake_case and a ``RayJobSpec``
    model work in Python), checked by the operator's own rules."""
    name: pulumi.Input[str] | None = None
    """The base of metadata.name, which is ``<name>-<spec digest>``; the component's
    name when None."""
    namespace: pulumi.Input[str] | None = None
    """metadata.namespace; the provider's default namespace when None."""
    labels: pulumi.Input[Mapping[str, pulumi.Input[str]]] | None = None
    annotations: pulumi.Input[Mapping[str, pulumi.Input[str]]] | None = None
    wait_for_ready: bool | None = True
    """Wait until ``status.jobDeploymentStatus`` is ``Complete`` (``Suspended`` with
    ``suspend``; ``Complete`` or ``Suspended``, whichever comes first, with ``queue_name``:
    a job waiting in Kueue's queue does not hold ``pulumi up``); True when None."""
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
    """``spec.suspend``: create the job without running it (set later, the operator
    deletes its cluster, which needs ``shutdown_after_job_finishes``). Refused with
    ``queue_name`` (Kueue sets it then)."""


_NO_ARGS: Final = RayJobArgs()


class RayJob(pulumi.ComponentResource):
    """One run of a Ray job: a ray.io/v1 RayJob, on its own cluster (``ray_cluster_spec``)
    or on an existing one (``cluster_selector``).

    A RayJob runs once; the operator never re-runs a finished job whose spec changed. So
    metadata.name is ``<name>-<digest of the spec>``: a change of the spec is a new name,
    ``pulumi preview`` says replace, and the new run is created before the old RayJob is
    deleted (their results never mix; with ``wait_for_ready`` the old one goes once the
    new one is Complete). Secret values are left out of the digest (a hash of a secret
    would let anyone who can list RayJobs test guesses of it): changing only a secret
    updates the RayJob in place and does not re-run it; change ``name`` to re-run.
    ``replace_on_changes=["spec"]`` is deliberately not set: it would replace the object
    under the same name in that one case, and pulumi-kubernetes' create of an existing
    name adopts the object that the delete of the old one then removes.

    ``deletionStrategy`` with ``DeleteSelf`` (and the operator's
    ``DELETE_RAYJOB_CR_AFTER_JOB_FINISHES``) is refused: the RayJob would delete itself
    after it ends, the next ``pulumi up --refresh`` would find it gone and create it
    again, and the job would run twice. Use DeleteCluster or DeleteWorkers to free the
    cluster, and ``pulumi destroy`` to delete the RayJob.

    ``pulumi up`` waits until ``status.jobDeploymentStatus`` is ``Complete`` (a failed
    job therefore fails the update at ``timeout``); ``wait_for_ready=False`` only submits.
    """

    name: pulumi.Output[str]
    """metadata.name: ``<name>-<spec digest>``."""
    namespace: pulumi.Output[str]
    head_service_name: pulumi.Output[str | None]
    """Known from ``cluster_selector``, else once the operator named the cluster."""
    dashboard_url: pulumi.Output[str | None]
    status: pulumi.Output[RayJobStatus]
    """The RayJob's ``status`` as the provider last read it: wire
    (camelCase) keys, ``{}`` until the operator writes one."""

    def __init__(
        self,
        resource_name: str,
        args: RayJobArgs = _NO_ARGS,
        opts: pulumi.ResourceOptions | None = None,
        **fields: object,
    ) -> None:
        """``args``, or its fields and the spec's fields as keyword arguments."""
        given, spec_fields = build_args(RayJobArgs, args, fields, extra_fields=True)
        common = w.WorkloadArgs.of(given, opts)
        ref = object_ref(
            RULES.kind, given.namespace, common.name if common.name is not None else resource_name
        )
        plan = w.plan_workload(
            RULES, common, resource_name, w.spec_argument(RULES, given.spec, spec_fields, ref)
        )
        super().__init__(TYPE_TOKEN, resource_name, None, aliased(opts, OLD_TYPE_TOKEN))

        # Create the new run first; the old one (another name) is deleted after it.
        extra = pulumi.ResourceOptions(delete_before_replace=False)
        cr = w.create_custom_resource(self, resource_name, RULES, plan, opts, extra)
        self.custom_resource: w.RayObjectResource = cr
        """The ray.io/v1 object (a Python attribute, not an output of the package)."""
        self.namespace = w.namespace_of(common, cr)
        self.name = w.derived(cr, plan, lambda j: j.metadata.name)
        status = w.status_of(cr, RayJobStatus)
        ns = self.namespace
        domain = common.cluster_domain
        self.head_service_name = w.derived(
            cr, plan, lambda j: status.apply(lambda s: head_service_name(j, s))
        )
        self.dashboard_url = w.derived(
            cr,
            plan,
            lambda j: pulumi.Output.all(status, ns).apply(
                lambda p: dashboard_url(j, p[0], p[1], domain)
            ),
            ns,
        )
        self.status = status
        w.report_queued(self, RULES, common, cr)
        self.register_outputs(
            {
                "name": self.name,
                "namespace": self.namespace,
                "head_service_name": self.head_service_name,
                "dashboard_url": self.dashboard_url,
                "status": self.status,
            }
        )
