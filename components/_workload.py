"""What the four workload components share: from arguments to one ray.io/v1 custom resource.

The flow, in ``plan_workload`` then ``create_custom_resource``:

1. the spec argument (model, dict or keyword arguments, Outputs anywhere) goes to its wire
   form without resolving any Output (``_inputs.to_wire``);
2. if nothing is an Output, the whole object is parsed and validated NOW, before the
   component registers anything; otherwise it is validated in an ``apply`` once the
   Outputs resolve, and the custom resource's ``depends_on`` waits for that (an unknown
   value in a preview never runs the check, so it cannot fail the preview);
3. for autoscaled clusters the fields the Ray autoscaler writes are left out of what is
   applied; otherwise ``pulumi.com/patchForce`` lets Pulumi take back a hand change;
4. the custom resource is created with ``parent`` set to the component, the operator in
   ``depends_on`` and the readiness annotation of its kind. A ``timeout`` becomes its
   ``customTimeouts`` for create and update: pulumi-kubernetes 4.25 prefers them to the
   ``pulumi.com/timeoutSeconds`` annotation, and unlike the annotation they are not part
   of the object, so changing only the timeout is not a diff (nor a new RayJob).

Who owns ``replicas`` is explained in ``_replicas``.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Generic, TypeVar, cast

import pulumi
import pulumi_kubernetes as k8s
from pulumi_kubernetes import _utilities as k8s_utilities

from operator_runtime.api import API_VERSION, FeatureGateError, FeatureGates, KubeModel
from operator_runtime.api.validation._syntax import label_value_error

from ._inputs import RayInputError, has_outputs, object_ref, parse_object, to_wire
from ._replicas import get_at, map_at, without_autoscaler_fields

__all__ = [
    "PATCH_FORCE",
    "QUEUE_NAME_LABEL",
    "SKIP_AWAIT",
    "WAIT_FOR",
    "Check",
    "KindRules",
    "Plan",
    "RayObjectResource",
    "WorkloadArgs",
    "after",
    "create_custom_resource",
    "derived",
    "parse_timeout",
    "plan_workload",
    "status_of",
]

WAIT_FOR: Final = "pulumi.com/waitFor"
SKIP_AWAIT: Final = "pulumi.com/skipAwait"
PATCH_FORCE: Final = "pulumi.com/patchForce"
QUEUE_NAME_LABEL: Final = "kueue.x-k8s.io/queue-name"
"""The label Kueue reads an object's LocalQueue from (in the object's namespace)."""

ModelT = TypeVar("ModelT", bound=KubeModel)
Wire = dict[str, Any]
Check = Callable[[ModelT], None]
"""A rule of the component itself; raises ``RayInputError``."""


def _provider_version() -> str:
    # The version pins the provider plugin, as every pulumi_kubernetes resource does.
    version: str = k8s_utilities.get_version()  # type: ignore[no-untyped-call]
    return version


class RayObjectResource(k8s.apiextensions.CustomResource):
    """A ray.io/v1 object, as ``CustomResource`` registers it, plus its ``status``.

    ``CustomResource`` only resolves the properties it was given; asking for ``status``
    (as None, which is never sent) makes the provider's status readable as an Output.
    """

    metadata: pulumi.Output[Any]
    spec: pulumi.Output[Any]
    status: pulumi.Output[Any]

    def __init__(
        self,
        resource_name: str,
        *,
        kind: str,
        metadata: pulumi.Input[Mapping[str, Any]],
        spec: pulumi.Input[Mapping[str, Any]],
        opts: pulumi.ResourceOptions,
    ) -> None:
        opts = pulumi.ResourceOptions.merge(
            opts, pulumi.ResourceOptions(version=_provider_version())
        )
        props = {
            "apiVersion": API_VERSION,
            "kind": kind,
            "metadata": metadata,
            "spec": spec,
            "status": None,
        }
        pulumi.CustomResource.__init__(
            self, f"kubernetes:{API_VERSION}:{kind}", resource_name, props, opts
        )


# --- arguments -------------------------------------------------------------------------

_DURATION = re.compile(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?")


def parse_timeout(timeout: float | str | datetime.timedelta | None, ref: str) -> int | None:
    """Seconds from ``600``, ``"10m"``, ``"1h30m"`` or a timedelta; None keeps the default."""
    if timeout is None:
        return None
    seconds: float | None = None
    if isinstance(timeout, datetime.timedelta):
        seconds = timeout.total_seconds()
    elif isinstance(timeout, int | float) and not isinstance(timeout, bool):
        seconds = float(timeout)
    elif isinstance(timeout, str):
        match = _DURATION.fullmatch(timeout.strip())
        if match is not None and any(match.groups()):
            h, m, s = (int(g or 0) for g in match.groups())
            seconds = float(h * 3600 + m * 60 + s)
    if seconds is None or seconds <= 0:
        raise RayInputError(
            ref, "timeout", f"{timeout!r} is not a positive duration",
            "give seconds (600), a string such as '10m' or '1h30m', or a timedelta",
            "INVALID_TIMEOUT",
        )  # fmt: skip
    return int(seconds)


@dataclass(frozen=True)
class WorkloadArgs:
    """What ``plan_workload`` reads of a workload component's args besides its spec
    (the four public args classes differ: a RayCronJob has no readiness to wait for)."""

    name: pulumi.Input[str] | None = None
    namespace: pulumi.Input[str] | None = None
    labels: pulumi.Input[Mapping[str, pulumi.Input[str]]] | None = None
    annotations: pulumi.Input[Mapping[str, pulumi.Input[str]]] | None = None
    wait_for_ready: bool = True
    timeout: float | str | datetime.timedelta | None = None
    feature_gates: FeatureGates | str | None = None
    cluster_domain: str = "cluster.local"
    queue_name: str | None = None
    suspend: bool | None = None

    @classmethod
    def of(cls, args: object, opts: pulumi.ResourceOptions | None) -> WorkloadArgs:
        """The common fields of a component's args; without ``feature_gates``, the gates
        of a ``RayOperator`` the component depends on (``opts.depends_on``), if any."""
        given = {f: getattr(args, f) for f in _COMMON if getattr(args, f, None) is not None}
        if "feature_gates" not in given:
            gates = _operator_gates(opts)
            if gates is not None:
                given["feature_gates"] = gates
        return cls(**given)

    def gates(self, ref: str) -> FeatureGates:
        """The gates to validate with: explicit, else the operator's, else the defaults."""
        if isinstance(self.feature_gates, FeatureGates):
            return self.feature_gates
        if isinstance(self.feature_gates, str):
            try:
                return FeatureGates.parse(self.feature_gates)
            except FeatureGateError as error:
                raise RayInputError(
                    ref, "feature_gates", str(error),
                    "give the operator's --feature-gates value, e.g. 'RayCronJob=true'",
                    "INVALID_FEATURE_GATES",
                ) from None  # fmt: skip
        return FeatureGates()


_COMMON: Final = (
    "name", "namespace", "labels", "annotations", "wait_for_ready", "timeout",
    "feature_gates", "cluster_domain", "queue_name", "suspend",
)  # fmt: skip


def _operator_gates(opts: pulumi.ResourceOptions | None) -> FeatureGates | None:
    """The gates the operator in ``depends_on`` runs with: validating with them catches a
    kind or field the operator has switched off. (A resource reference, as a component
    provider receives it, carries no gates: then the defaults, or ``feature_gates``.)"""
    depends_on = opts.depends_on if opts is not None else None
    if depends_on is None:
        return None
    for dependency in depends_on if isinstance(depends_on, list | tuple) else [depends_on]:
        gates = getattr(dependency, "feature_gates", None)
        if isinstance(gates, FeatureGates):
            return gates
    return None


@dataclass(frozen=True)
class KindRules(Generic[ModelT]):
    """What differs between the four kinds."""

    kind: str
    model: type[ModelT]
    spec_model: type[KubeModel]
    cluster_path: tuple[str, ...] | None
    """Wire keys from ``spec`` to the embedded RayClusterSpec (``()`` for a RayCluster)."""
    wait_for: str | None
    """The ``pulumi.com/waitFor`` value that means ready; None for nothing to wait for."""
    wait_for_suspended: str | None = None
    """What to wait for instead with ``spec.suspend: true``: such an object never gets
    ready, and waiting for it would only end at the timeout."""
    wait_for_queued: str | None = None
    """What to wait for with a ``queue_name``: ready, or suspended (held in Kueue's
    queue), whichever comes first. A queued object may wait hours for quota; ``pulumi up``
    ends once it is in the queue rather than at the timeout."""
    is_suspended: Callable[[Mapping[str, Any]], bool] = lambda _: False
    """Whether a status (as the provider read it) says the object is suspended."""
    name_for: Callable[[pulumi.Input[str], object], pulumi.Input[str]] = lambda base, _: base
    """metadata.name from the base name and the applied spec (RayJob adds a digest)."""
    checks: Sequence[Check[ModelT]] = ()
    """Rules of the component itself, on top of the operator's; each raises RayInputError."""


@dataclass(frozen=True)
class Plan(Generic[ModelT]):
    """What the custom resource is given, and the validated object."""

    name: pulumi.Input[str]
    """metadata.name, as given (an Output keeps its own secretness)."""
    metadata: pulumi.Input[Wire]
    spec: pulumi.Input[Wire]
    model: pulumi.Output[ModelT]
    gate: pulumi.Output[None] | None
    """Resolves once an Output-valued object validated; raises if it does not."""
    timeout_seconds: int | None = None
    known: ModelT | None = field(default=None)
    """The object, when it was known (and validated) at program time."""


# --- the plan --------------------------------------------------------------------------


def spec_argument(
    rules: KindRules[Any], spec: object, spec_fields: Mapping[str, object], ref: str
) -> object:
    """The one spec the user gave: ``spec=`` (model, dict or Output) or keyword arguments."""
    if spec is not None and spec_fields:
        raise RayInputError(
            ref, "spec", f"given both as spec= and as keyword arguments ({', '.join(spec_fields)})",
            "pass one or the other", "SPEC_GIVEN_TWICE",
        )  # fmt: skip
    if spec is None:
        return dict(spec_fields)
    if isinstance(spec, KubeModel) and not isinstance(spec, rules.spec_model):
        raise RayInputError(
            ref, "spec", f"a {type(spec).__name__} is not a {rules.spec_model.__name__}",
            f"pass a {rules.spec_model.__name__}, a dict or keyword arguments", "SPEC_WRONG_TYPE",
        )  # fmt: skip
    return spec


def _merged(*maps: object) -> pulumi.Input[Wire]:
    """Later maps win; Output-valued maps are merged once they resolve."""
    present = [m for m in maps if m is not None]
    if any(isinstance(m, pulumi.Output) for m in present):
        return pulumi.Output.all(*present).apply(
            lambda resolved: {k: v for m in resolved if m for k, v in m.items()}
        )
    return {k: v for m in present if isinstance(m, Mapping) for k, v in m.items()}


def _own_annotations(
    rules: KindRules[Any], args: WorkloadArgs, autoscaled: object, suspended: object
) -> object:
    """skipAwait or waitFor (ready, or suspended), and patchForce unless autoscaled."""

    def annotations(autoscales: object, suspends: object) -> dict[str, str]:
        ours: dict[str, str] = {}
        wait_for = rules.wait_for_suspended if suspends is True else rules.wait_for
        if args.queue_name is not None and rules.wait_for_queued is not None:
            wait_for = rules.wait_for_queued
        if not args.wait_for_ready:
            ours[SKIP_AWAIT] = "true"
        elif wait_for is not None:
            ours[WAIT_FOR] = wait_for
        if not autoscales:
            ours[PATCH_FORCE] = "true"
        return ours

    if isinstance(autoscaled, pulumi.Output) or isinstance(suspended, pulumi.Output):
        return pulumi.Output.all(autoscaled, suspended).apply(lambda p: annotations(*p))
    return annotations(autoscaled, suspended)


def _queue_labels(args: WorkloadArgs, ref: str) -> object:
    """``labels`` plus Kueue's queue-name label, when there is a ``queue_name``."""
    queue = args.queue_name
    if queue is None:
        return args.labels
    problem = "must not be empty" if queue == "" else label_value_error(queue)
    if problem is not None:
        raise RayInputError(
            ref, "queue_name", f"{queue!r}: {problem}",
            f"give the name of a Kueue LocalQueue in the object's namespace (it becomes "
            f"the {QUEUE_NAME_LABEL} label, so it must be a valid label value)",
            "INVALID_QUEUE_NAME",
        )  # fmt: skip
    labels = args.labels
    if isinstance(labels, Mapping) and labels.get(QUEUE_NAME_LABEL, queue) != queue:
        raise RayInputError(
            ref, "labels", f"{QUEUE_NAME_LABEL} is {labels[QUEUE_NAME_LABEL]!r} but "
            f"queue_name is {queue!r}", "give the queue once, as queue_name",
            "QUEUE_NAME_GIVEN_TWICE",
        )  # fmt: skip
    return _merged(labels, {QUEUE_NAME_LABEL: queue})


def _with_suspend(args: WorkloadArgs, wire_spec: object, ref: str) -> object:
    """The spec with ``suspend`` set when the argument is given.

    With a ``queue_name``, ``spec.suspend`` is Kueue's: its webhook suspends the object
    at creation and its controller unsuspends it at admission (and suspends it again on
    eviction). Pulumi applying a value of its own would undo that on the next update,
    with ``patchForce`` even over Kueue's ownership of the field, so it is refused.
    """
    given = args.suspend

    def merged(spec: object) -> object:
        in_spec = spec.get("suspend") if isinstance(spec, Mapping) else None
        if args.queue_name is not None and (given is not None or in_spec is not None):
            raise RayInputError(
                ref, "suspend" if given is not None else "spec.suspend",
                "suspend is Kueue's to set when queue_name is given",
                "leave suspend out: Kueue suspends the object at creation and lets it run "
                "once it admits it", "SUSPEND_WITH_QUEUE_NAME",
            )  # fmt: skip
        if given is None:
            return spec
        if in_spec is not None:
            raise RayInputError(
                ref, "suspend", "given both as suspend= and in the spec",
                "give it once", "SUSPEND_GIVEN_TWICE",
            )  # fmt: skip
        return {**cast(Wire, spec or {}), "suspend": given}

    if isinstance(wire_spec, pulumi.Output):
        if given is None and args.queue_name is None:
            return wire_spec
        # Raised once the spec resolves, as every rule on an Output-valued spec is.
        return wire_spec.apply(merged)
    return merged(wire_spec)


def plan_workload(
    rules: KindRules[ModelT], args: WorkloadArgs, resource_name: str, spec: object
) -> Plan[ModelT]:
    """Everything the custom resource needs; raises ``RayInputError`` now when every
    argument is known, else the returned ``gate`` raises once the Outputs resolve."""
    given_ref = object_ref(
        rules.kind, args.namespace, args.name if args.name is not None else resource_name
    )
    labels = _queue_labels(args, given_ref)
    wire_spec = _with_suspend(args, to_wire(rules.spec_model, spec), given_ref)
    cluster_path = rules.cluster_path
    applied = (
        wire_spec
        if cluster_path is None
        else map_at(wire_spec, cluster_path, without_autoscaler_fields)
    )
    autoscaled = (
        False if cluster_path is None
        else get_at(wire_spec, (*cluster_path, "enableInTreeAutoscaling"))
    )  # fmt: skip
    name = rules.name_for(args.name if args.name is not None else resource_name, applied)
    user_meta: Wire = {"name": name}
    for key in ("namespace", "annotations"):
        if getattr(args, key) is not None:
            user_meta[key] = getattr(args, key)
    if labels is not None:
        user_meta["labels"] = labels
    metadata: Wire = {
        **user_meta,
        "annotations": _merged(
            _own_annotations(rules, args, autoscaled, get_at(wire_spec, ("suspend",))),
            args.annotations,
        ),
    }

    def checked(obj: Wire) -> ModelT:
        return parse_object(rules.model, obj, gates, kind=rules.kind, checks=rules.checks)

    ref = object_ref(rules.kind, args.namespace, name)
    timeout = parse_timeout(args.timeout, ref)
    gates = args.gates(ref)
    whole = {"metadata": user_meta, "spec": wire_spec}
    if not has_outputs(whole):
        model = checked(whole)
        known_model: pulumi.Output[ModelT] = pulumi.Output.from_input(model)
        return Plan(name, metadata, cast(Wire, applied), known_model, None, timeout, model)
    validated: pulumi.Output[ModelT] = pulumi.Output.from_input(whole).apply(checked)
    # The gate carries no value, only the outcome: never secret, even for a secret spec.
    gate = pulumi.Output.unsecret(validated.apply(lambda _: None))
    return Plan(name, metadata, cast(Wire, applied), validated, gate, timeout)


def create_custom_resource(
    parent: pulumi.Resource,
    resource_name: str,
    rules: KindRules[Any],
    plan: Plan[Any],
    component_opts: pulumi.ResourceOptions | None,
    extra: pulumi.ResourceOptions | None = None,
) -> RayObjectResource:
    """The custom resource, a child of ``parent`` that waits for the operator and for
    what the component itself was told to depend on (children do not inherit that)."""
    # The operator, when the component was given it in ``opts.depends_on``, is inherited
    # below: destroy then deletes the object while the operator still runs.
    depends_on: list[pulumi.Input[pulumi.Resource]] = []
    if plan.gate is not None:
        depends_on.append(plan.gate)  # type: ignore[arg-type]
    seconds = plan.timeout_seconds
    timeouts = (
        pulumi.CustomTimeouts(create=f"{seconds}s", update=f"{seconds}s") if seconds else None
    )
    # No provider here: the child inherits the component's (``opts.provider``).
    opts = pulumi.ResourceOptions(parent=parent, depends_on=depends_on, custom_timeouts=timeouts)
    if component_opts is not None and component_opts.depends_on is not None:
        inherited = pulumi.ResourceOptions(depends_on=component_opts.depends_on)
        opts = pulumi.ResourceOptions.merge(opts, inherited)
    return RayObjectResource(
        resource_name,
        kind=rules.kind,
        metadata=plan.metadata,
        spec=plan.spec,
        opts=pulumi.ResourceOptions.merge(opts, extra),
    )


def after(resource: pulumi.Resource, value: pulumi.Input[Any]) -> pulumi.Output[Any]:
    """``value``, as an Output that also depends on ``resource`` (so a consumer of a URL
    waits for the object), yet stays known in a preview when the value is."""
    return pulumi.Output.all(resource.urn, value).apply(lambda pair: pair[1])


def derived(
    resource: pulumi.Resource,
    plan: Plan[ModelT],
    compute: Callable[[ModelT], object],
    *secret_sources: pulumi.Input[Any],
) -> pulumi.Output[Any]:
    """A name or URL computed from the validated object, after ``resource``.

    The object is secret as a whole as soon as one value in it is (a Redis password, an
    image tag given as a secret), yet names and ports are not secrets: such a value is
    kept secret only if one of ``secret_sources`` (the name, the namespace) is.
    """
    value = pulumi.Output.unsecret(plan.model.apply(compute))
    return pulumi.Output.all(resource.urn, value, plan.name, *secret_sources).apply(
        lambda parts: parts[1]
    )


def namespace_of(args: WorkloadArgs, resource: RayObjectResource) -> pulumi.Output[str]:
    """The namespace asked for, else the one the provider put the object in."""
    if args.namespace is not None:
        return after(resource, args.namespace)
    return resource.metadata.apply(lambda meta: (meta or {}).get("namespace") or "default")


StatusT = TypeVar("StatusT", bound=Mapping[str, Any])


def status_of(resource: RayObjectResource, shape: type[StatusT]) -> pulumi.Output[StatusT]:
    """The object's ``status`` as the provider read it, typed as ``shape`` (one of
    ``components.status``): ``{}`` before the operator wrote one, never None, so a
    consumer's typed status object exists as soon as the object does."""
    del shape  # names the type for the caller; the value is the provider's own dict
    return resource.status.apply(lambda status: cast(StatusT, status or {}))


def report_queued(
    component: pulumi.Resource,
    rules: KindRules[Any],
    args: WorkloadArgs,
    resource: RayObjectResource,
) -> None:
    """Say, in ``pulumi up``'s output, that the object waits in Kueue's queue: the update
    succeeded without its being ready, and its status alone would not say why."""
    queue = args.queue_name
    if queue is None or not args.wait_for_ready or pulumi.runtime.is_dry_run():
        return

    # A secret name or namespace must not reach a log line: the message then names the
    # kind alone (it is the component's diagnostic either way).
    given = pulumi.Output.all(args.name, args.namespace)
    secret_name: pulumi.Output[bool] = pulumi.Output.from_input(given.is_secret())

    def report(parts: list[Any]) -> None:
        status, metadata, secret = parts
        if isinstance(status, Mapping) and rules.is_suspended(status):
            meta = metadata if isinstance(metadata, Mapping) else {}
            ref = (
                f"The {rules.kind}"
                if secret
                else object_ref(rules.kind, meta.get("namespace"), meta.get("name"))
            )
            pulumi.log.info(
                f"{ref} is queued: suspended in Kueue's LocalQueue {queue!r} until Kueue "
                "admits it; `pulumi up` does not wait for that",
                resource=component,
            )

    pulumi.Output.all(resource.status, resource.metadata, secret_name).apply(report)
