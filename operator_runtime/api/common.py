"""Pieces shared by the four ray.io/v1 kinds: object metadata, conditions, and the
aliases for embedded Kubernetes types.

Embedded Kubernetes objects (pod templates, services, env vars, ...) stay plain JSON:
the API server validates them against their real schema (the CRD generator swaps in
the Kubernetes OpenAPI definition named by ``K8sSchema``), and the operator passes them
on untouched, so modelling them field by field here would only add drift.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import AwareDatetime, ConfigDict, Field, GetCoreSchemaHandler
from pydantic.config import JsonDict, JsonValue

from operator_runtime.api._base import JSONObject, K8sSchema, KubeModel

API_GROUP: Final = "ray.io"
API_VERSION: Final = "ray.io/v1"
KUBERAY_VERSION: Final = "v1.7.0"
"""The KubeRay release whose API, command line, variables and behaviour this operator
matches; stamped on the pods and RayService clusters it creates
(``ray.io/kuberay-version``) and reported in the usage-stats tags."""

MANAGED_BY_KUBERAY: Final = "ray.io/kuberay-operator"
MANAGED_BY_MULTIKUEUE: Final = "kueue.x-k8s.io/multikueue"


class _Format:
    """Adds an OpenAPI ``format`` (int32, int64, float) to a number's schema."""

    __slots__ = ("fmt",)

    def __init__(self, fmt: str) -> None:
        self.fmt = fmt

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> Any:
        schema = handler(core_schema)
        schema["format"] = self.fmt
        return schema


INT32_MIN: Final = -(2**31)
INT32_MAX: Final = 2**31 - 1


class _Within:
    """Keeps an integer within a Go type's range, on top of any tighter bound the field
    sets itself (``Field(ge=0)``): the bounds intersect, whatever order pydantic applies
    them in. They reach the CRD as ``minimum``/``maximum``."""

    __slots__ = ("high", "low")

    def __init__(self, low: int, high: int) -> None:
        self.low, self.high = low, high

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> Any:
        schema: dict[str, Any] = dict(handler(source))
        if schema.get("type") != "int":
            raise TypeError(f"a Go integer range on a {schema.get('type')} schema")
        schema["ge"] = max(schema.get("ge", self.low), self.low)
        schema["le"] = min(schema.get("le", self.high), self.high)
        return schema


# The API server does not enforce ``format: int32`` on a custom resource, so the bounds
# are explicit: the CRD's minimum/maximum refuse an out-of-range value at apply, and the
# model refuses it (with the field path) wherever else a spec comes from.
Int32 = Annotated[int, _Within(INT32_MIN, INT32_MAX), _Format("int32")]
"""A Go ``int32``, bounded as one."""
Int64 = Annotated[int, _Format("int64")]
"""A Go ``int64``. Not bounded in the schema: the API server reads a schema's bounds as
float64, so 2^63 - 1 becomes 2^63 and then -2^63, and every value fails; an int64 only
holds ``metadata.generation``-like counters the API server writes itself."""
Float32 = Annotated[float, _Format("float")]
"""A Go ``float32``."""

Time = Annotated[AwareDatetime, K8sSchema("io.k8s.apimachinery.pkg.apis.meta.v1.Time")]
"""A ``metav1.Time``: RFC 3339 on the wire, a timezone-aware datetime in Python."""

# Quantities arrive as strings from the API server but users may write bare integers.
Quantity = Annotated[str | int, K8sSchema("io.k8s.apimachinery.pkg.api.resource.Quantity")]
"""A ``resource.Quantity`` such as ``"500m"``, ``"4Gi"`` or ``2``."""

_CORE = "io.k8s.api.core.v1."
_NET = "io.k8s.api.networking.v1."
PodTemplateSpec = Annotated[JSONObject, K8sSchema(_CORE + "PodTemplateSpec")]
ServiceObject = Annotated[JSONObject, K8sSchema(_CORE + "Service")]
EnvVar = Annotated[JSONObject, K8sSchema(_CORE + "EnvVar")]
EnvVarSource = Annotated[JSONObject, K8sSchema(_CORE + "EnvVarSource")]
EnvFromSource = Annotated[JSONObject, K8sSchema(_CORE + "EnvFromSource")]
VolumeMount = Annotated[JSONObject, K8sSchema(_CORE + "VolumeMount")]
ResourceRequirements = Annotated[JSONObject, K8sSchema(_CORE + "ResourceRequirements")]
SecurityContext = Annotated[JSONObject, K8sSchema(_CORE + "SecurityContext")]
IngressTLS = Annotated[JSONObject, K8sSchema(_NET + "IngressTLS")]
NetworkPolicyIngressRule = Annotated[JSONObject, K8sSchema(_NET + "NetworkPolicyIngressRule")]
NetworkPolicyEgressRule = Annotated[JSONObject, K8sSchema(_NET + "NetworkPolicyEgressRule")]

StringMap = dict[str, str]
"""A ``map[string]string``."""


def cel_rules(*rules: tuple[str, str]) -> JsonDict:
    """``json_schema_extra`` carrying CEL rules, as ``(rule, message)`` pairs."""
    validations: list[JsonValue] = [{"rule": rule, "message": msg} for rule, msg in rules]
    return {"x-kubernetes-validations": validations}


OBJECT_NAME_MAX: Final = 253
OBJECT_NAME_PATTERN: Final = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
"""A DNS-1123 subdomain: what every object the operator reads by a spec's name is named
(``[.]`` rather than ``\\.`` so the same text is valid in CEL, OpenAPI and Python)."""
OBJECT_NAME_RULE: Final = (
    "a valid object name: a DNS-1123 subdomain "
    f"(lowercase alphanumerics, '-' and '.', at most {OBJECT_NAME_MAX} characters)"
)


def object_name_schema() -> JsonDict:
    """``json_schema_extra`` for a string field that names an object the operator reads
    or writes: the CRD refuses anything else (``../other-namespace/...`` included)."""
    return {"pattern": OBJECT_NAME_PATTERN, "maxLength": OBJECT_NAME_MAX}


def object_name_cel(value: str, guard: str, field_path: str, field: str) -> JsonDict:
    """One CEL rule: ``value`` (a CEL expression), when ``guard`` holds, is an object name;
    ``field_path`` (relative to the rule's node) is where the API server reports it."""
    check = f"size({value}) <= {OBJECT_NAME_MAX} && {value}.matches('{OBJECT_NAME_PATTERN}')"
    return {
        "rule": f"!({guard}) || ({check})",
        "message": f"{field} must be {OBJECT_NAME_RULE}",
        "fieldPath": field_path,
    }


MANAGED_BY_RULES: Final = (
    ("self == oldSelf", "the managedBy field is immutable"),
    (
        f"self in ['{MANAGED_BY_KUBERAY}', '{MANAGED_BY_MULTIKUEUE}']",
        f"the managedBy field value must be either '{MANAGED_BY_KUBERAY}' "
        f"or '{MANAGED_BY_MULTIKUEUE}'",
    ),
)


def managed_by_field() -> Any:
    """The ``spec.managedBy`` field shared by RayCluster, RayJob and RayService."""
    return Field(
        default=None,
        description=(
            f"Controller that reconciles this object: unset or '{MANAGED_BY_KUBERAY}' "
            f"for this operator, '{MANAGED_BY_MULTIKUEUE}' to hand it to Kueue. Immutable."
        ),
        json_schema_extra=cel_rules(*MANAGED_BY_RULES),
    )


class OwnerReference(KubeModel):
    """An owner of this object (``metav1.OwnerReference``)."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-k8s-definition": "io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference"
        }
    )

    api_version: str = Field(description="API version of the owner.")
    kind: str = Field(description="Kind of the owner.")
    name: str = Field(description="Name of the owner.")
    uid: str = Field(description="UID of the owner.")
    controller: bool | None = Field(
        default=None, description="True if the owner is the controller."
    )
    block_owner_deletion: bool | None = Field(
        default=None, description="True if the owner cannot be deleted before this object."
    )


class ObjectMeta(KubeModel):
    """Object metadata (``metav1.ObjectMeta``), every field the API server may return."""

    name: str | None = Field(default=None, description="Name, unique within the namespace.")
    generate_name: str | None = Field(default=None, description="Prefix for a server-made name.")
    namespace: str | None = Field(default=None, description="Namespace of the object.")
    self_link: str | None = Field(default=None, description="Deprecated; never set by servers.")
    uid: str | None = Field(default=None, description="Server-assigned unique ID.")
    resource_version: str | None = Field(default=None, description="Opaque version for updates.")
    generation: Int64 | None = Field(default=None, description="Sequence number of spec changes.")
    creation_timestamp: Time | None = Field(default=None, description="When it was created.")
    deletion_timestamp: Time | None = Field(default=None, description="When deletion was asked.")
    deletion_grace_period_seconds: Int64 | None = Field(
        default=None, description="Grace period before the object is removed."
    )
    labels: StringMap | None = Field(default=None, description="Labels.")
    annotations: StringMap | None = Field(default=None, description="Annotations.")
    owner_references: list[OwnerReference] | None = Field(
        default=None, description="Objects this one depends on."
    )
    finalizers: list[str] | None = Field(
        default=None, description="Finalizers that block deletion."
    )
    managed_fields: list[JSONObject] | None = Field(
        default=None, description="Server-side-apply field ownership, kept as-is."
    )


ConditionStatus = Literal["True", "False", "Unknown"]


class Condition(KubeModel):
    """One status condition (``metav1.Condition``)."""

    model_config = ConfigDict(
        json_schema_extra={"x-k8s-definition": "io.k8s.apimachinery.pkg.apis.meta.v1.Condition"}
    )

    type: str = Field(description="Condition type in CamelCase, e.g. HeadPodReady.")
    status: ConditionStatus = Field(description="True, False or Unknown.")
    observed_generation: Int64 | None = Field(
        default=None, description="Generation the condition was computed from."
    )
    last_transition_time: Time = Field(description="When the status last changed.")
    reason: str = Field(description="Machine-readable CamelCase reason.")
    message: str = Field(description="Human-readable detail (may be empty).")


def conditions_field() -> Any:
    """A ``conditions`` list keyed by ``type``, as Kubernetes status conditions are."""
    return Field(
        default=None,
        description="Latest observations of the object's state, one per condition type.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )


def find_condition(conditions: list[Condition] | None, type_: str) -> Condition | None:
    """The condition of the given type, if present."""
    return next((c for c in conditions or () if c.type == type_), None)


def is_condition_true(conditions: list[Condition] | None, type_: str) -> bool:
    """Whether the condition of the given type exists with status True."""
    found = find_condition(conditions, type_)
    return found is not None and found.status == "True"
