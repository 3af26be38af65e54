"""Errors of the API layer.

The tree::

    RayApiError                      anything the API layer raises on purpose
    ├── FeatureGateError             a bad ``--feature-gates`` value or unknown gate name
    └── InvalidObjectError           a ray.io/v1 object breaks a KubeRay rule (ValueError)
        ├── InvalidMetadataError     -> event reason Invalid<Kind>Metadata
        ├── InvalidSpecError         -> event reason Invalid<Kind>Spec
        └── InvalidStatusError       -> event reason Invalid<Kind>Status

An ``InvalidObjectError`` carries one or more ``Violation``s of one object, each with a
stable ``code`` (an ``ErrorCode``), the field path in wire spelling
(``spec.workerGroupSpecs[1].minReplicas``), what is wrong, and what would be valid. Its
message is one line per violation, in the one format every user mistake is reported in,
whatever caught it (the models, the Kubernetes schema, KubeRay's rules)::

    RayCluster default/foo: spec.headGroupSpec.serviceType: <what is wrong>; <fix> [CODE]

A controller turns it into a Warning event with ``event_reason`` and never retries:
the user has to change the object. The ``validate_*`` functions raise the first
violation only (as KubeRay does); ``check_object`` and ``parse_object`` of
``operator_runtime.api.validation`` raise all of them at once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import ClassVar, Final


class ValidationScope(StrEnum):
    """Which part of the object a rule is about; it picks the event reason."""

    METADATA = "Metadata"
    SPEC = "Spec"
    STATUS = "Status"


class ErrorCode(StrEnum):
    """Stable identifiers of the validation rules (KubeRay v1.7 semantics)."""

    # RayCluster metadata / status
    RAYCLUSTER_NAME_TOO_LONG = "RAYCLUSTER_NAME_TOO_LONG"
    RAYCLUSTER_NAME_NOT_DNS1035 = "RAYCLUSTER_NAME_NOT_DNS1035"
    RAYCLUSTER_SUSPENDING_AND_SUSPENDED = "RAYCLUSTER_SUSPENDING_AND_SUSPENDED"
    # RayCluster spec (also reported for the cluster spec inside a RayJob/RayService)
    RAYCLUSTER_HEAD_NO_CONTAINER = "RAYCLUSTER_HEAD_NO_CONTAINER"
    RAYCLUSTER_DUPLICATE_GROUP_NAME = "RAYCLUSTER_DUPLICATE_GROUP_NAME"
    RAYCLUSTER_RESOURCES_CONFLICT = "RAYCLUSTER_RESOURCES_CONFLICT"
    RAYCLUSTER_LABELS_IN_RAY_START_PARAMS = "RAYCLUSTER_LABELS_IN_RAY_START_PARAMS"
    RAYCLUSTER_INVALID_LABEL = "RAYCLUSTER_INVALID_LABEL"
    RAYCLUSTER_WORKER_NO_CONTAINER = "RAYCLUSTER_WORKER_NO_CONTAINER"
    RAYCLUSTER_REPLICAS_UNSET = "RAYCLUSTER_REPLICAS_UNSET"
    RAYCLUSTER_NEGATIVE_REPLICAS = "RAYCLUSTER_NEGATIVE_REPLICAS"
    RAYCLUSTER_MIN_GT_MAX = "RAYCLUSTER_MIN_GT_MAX"
    RAYCLUSTER_NEGATIVE_IDLE_TIMEOUT = "RAYCLUSTER_NEGATIVE_IDLE_TIMEOUT"
    RAYCLUSTER_IDLE_TIMEOUT_NEEDS_V2 = "RAYCLUSTER_IDLE_TIMEOUT_NEEDS_V2"
    RAYCLUSTER_PRIORITY_NEEDS_RAY_VERSION = "RAYCLUSTER_PRIORITY_NEEDS_RAY_VERSION"
    RAYCLUSTER_PRIORITY_NEEDS_V2 = "RAYCLUSTER_PRIORITY_NEEDS_V2"
    RAYCLUSTER_FT_ANNOTATION_AND_OPTIONS = "RAYCLUSTER_FT_ANNOTATION_AND_OPTIONS"
    RAYCLUSTER_REDIS_ADDRESS_WITHOUT_FT = "RAYCLUSTER_REDIS_ADDRESS_WITHOUT_FT"
    RAYCLUSTER_FT_REDIS_PASSWORD_PARAM = "RAYCLUSTER_FT_REDIS_PASSWORD_PARAM"
    RAYCLUSTER_FT_REDIS_PASSWORD_ENV = "RAYCLUSTER_FT_REDIS_PASSWORD_ENV"
    RAYCLUSTER_FT_REDIS_ADDRESS_ENV = "RAYCLUSTER_FT_REDIS_ADDRESS_ENV"
    RAYCLUSTER_FT_STORAGE_NAMESPACE_ANNOTATION = "RAYCLUSTER_FT_STORAGE_NAMESPACE_ANNOTATION"
    RAYCLUSTER_ROCKSDB_GATE_DISABLED = "RAYCLUSTER_ROCKSDB_GATE_DISABLED"
    RAYCLUSTER_ROCKSDB_REDIS_FIELD = "RAYCLUSTER_ROCKSDB_REDIS_FIELD"
    RAYCLUSTER_ROCKSDB_CLAIM_CONFLICT = "RAYCLUSTER_ROCKSDB_CLAIM_CONFLICT"
    RAYCLUSTER_ROCKSDB_MANAGED_ENV = "RAYCLUSTER_ROCKSDB_MANAGED_ENV"
    RAYCLUSTER_ROCKSDB_MANAGED_VOLUME = "RAYCLUSTER_ROCKSDB_MANAGED_VOLUME"
    RAYCLUSTER_REDIS_STORAGE_SET = "RAYCLUSTER_REDIS_STORAGE_SET"
    RAYCLUSTER_REDIS_USERNAME_OUTSIDE_OPTIONS = "RAYCLUSTER_REDIS_USERNAME_OUTSIDE_OPTIONS"
    RAYCLUSTER_SUSPEND_GROUP_GATE_DISABLED = "RAYCLUSTER_SUSPEND_GROUP_GATE_DISABLED"
    RAYCLUSTER_AUTOSCALER_V2_ENV_WITHOUT_AUTOSCALING = (
        "RAYCLUSTER_AUTOSCALER_V2_ENV_WITHOUT_AUTOSCALING"
    )
    RAYCLUSTER_SUSPEND_GROUP_WITH_AUTOSCALING = "RAYCLUSTER_SUSPEND_GROUP_WITH_AUTOSCALING"
    RAYCLUSTER_AUTOSCALER_VERSION_AND_ENV = "RAYCLUSTER_AUTOSCALER_VERSION_AND_ENV"
    RAYCLUSTER_V2_RESTART_POLICY = "RAYCLUSTER_V2_RESTART_POLICY"
    RAYCLUSTER_AUTOSCALER_NEGATIVE_IDLE_TIMEOUT = "RAYCLUSTER_AUTOSCALER_NEGATIVE_IDLE_TIMEOUT"
    RAYCLUSTER_AUTOSCALER_MANAGED_ENV = "RAYCLUSTER_AUTOSCALER_MANAGED_ENV"
    RAYCLUSTER_HISTORY_SERVER_GATE_DISABLED = "RAYCLUSTER_HISTORY_SERVER_GATE_DISABLED"
    RAYCLUSTER_HISTORY_SERVER_NO_COLLECTOR = "RAYCLUSTER_HISTORY_SERVER_NO_COLLECTOR"
    RAYCLUSTER_COLLECTOR_NO_IMAGE = "RAYCLUSTER_COLLECTOR_NO_IMAGE"
    RAYCLUSTER_COLLECTOR_MANAGED_ENV = "RAYCLUSTER_COLLECTOR_MANAGED_ENV"
    RAYCLUSTER_COLLECTOR_STORAGE_ENV = "RAYCLUSTER_COLLECTOR_STORAGE_ENV"
    RAYCLUSTER_COLLECTOR_CONTAINER_CLASH = "RAYCLUSTER_COLLECTOR_CONTAINER_CLASH"
    RAYCLUSTER_AUTH_RAY_VERSION = "RAYCLUSTER_AUTH_RAY_VERSION"
    RAYCLUSTER_K8S_AUTH_RAY_VERSION = "RAYCLUSTER_K8S_AUTH_RAY_VERSION"
    RAYCLUSTER_K8S_AUTH_WITH_SECRET = "RAYCLUSTER_K8S_AUTH_WITH_SECRET"
    RAYCLUSTER_K8S_AUTH_WITHOUT_TOKEN_MODE = "RAYCLUSTER_K8S_AUTH_WITHOUT_TOKEN_MODE"
    RAYCLUSTER_NETWORK_POLICY_GATE_DISABLED = "RAYCLUSTER_NETWORK_POLICY_GATE_DISABLED"
    RAYCLUSTER_NETWORK_POLICY_RULES_UNUSED = "RAYCLUSTER_NETWORK_POLICY_RULES_UNUSED"
    RAYCLUSTER_NETWORK_POLICY_GROUP_NAME = "RAYCLUSTER_NETWORK_POLICY_GROUP_NAME"
    RAYCLUSTER_NETWORK_POLICY_UNKNOWN_GROUP = "RAYCLUSTER_NETWORK_POLICY_UNKNOWN_GROUP"
    RAYCLUSTER_TLS_GATE_DISABLED = "RAYCLUSTER_TLS_GATE_DISABLED"
    RAYCLUSTER_TLS_MANAGED_ENV = "RAYCLUSTER_TLS_MANAGED_ENV"
    RAYCLUSTER_TLS_MANAGED_MOUNT = "RAYCLUSTER_TLS_MANAGED_MOUNT"
    RAYCLUSTER_UPGRADE_STRATEGY_ON_CHILD = "RAYCLUSTER_UPGRADE_STRATEGY_ON_CHILD"
    # RayJob
    RAYJOB_NAME_TOO_LONG = "RAYJOB_NAME_TOO_LONG"
    RAYJOB_NAME_NOT_DNS1035 = "RAYJOB_NAME_NOT_DNS1035"
    RAYJOB_SUSPEND_WITHOUT_SHUTDOWN = "RAYJOB_SUSPEND_WITHOUT_SHUTDOWN"
    RAYJOB_NEGATIVE_TTL = "RAYJOB_NEGATIVE_TTL"
    RAYJOB_TTL_WITHOUT_SHUTDOWN = "RAYJOB_TTL_WITHOUT_SHUTDOWN"
    RAYJOB_DELETION_STRATEGY_GATE_DISABLED = "RAYJOB_DELETION_STRATEGY_GATE_DISABLED"
    RAYJOB_DELETION_RULES_WITH_SHUTDOWN = "RAYJOB_DELETION_RULES_WITH_SHUTDOWN"
    RAYJOB_DELETION_RULES_WITH_LEGACY = "RAYJOB_DELETION_RULES_WITH_LEGACY"
    RAYJOB_DELETION_STRATEGY_EMPTY = "RAYJOB_DELETION_STRATEGY_EMPTY"
    RAYJOB_LEGACY_POLICY_INCOMPLETE = "RAYJOB_LEGACY_POLICY_INCOMPLETE"
    RAYJOB_DELETION_POLICY_WITH_SELECTOR = "RAYJOB_DELETION_POLICY_WITH_SELECTOR"
    RAYJOB_DELETE_WORKERS_WITH_AUTOSCALING = "RAYJOB_DELETE_WORKERS_WITH_AUTOSCALING"
    RAYJOB_SHUTDOWN_WITH_DELETE_NONE = "RAYJOB_SHUTDOWN_WITH_DELETE_NONE"
    RAYJOB_DELETION_CONDITION_INVALID = "RAYJOB_DELETION_CONDITION_INVALID"
    RAYJOB_DUPLICATE_DELETION_RULE = "RAYJOB_DUPLICATE_DELETION_RULE"
    RAYJOB_DELETION_TTL_ORDER = "RAYJOB_DELETION_TTL_ORDER"
    RAYJOB_SELECTOR_WITH_SUSPEND = "RAYJOB_SELECTOR_WITH_SUSPEND"
    RAYJOB_NO_CLUSTER = "RAYJOB_NO_CLUSTER"
    RAYJOB_SELECTOR_EMPTY_CLUSTER_NAME = "RAYJOB_SELECTOR_EMPTY_CLUSTER_NAME"
    RAYJOB_SELECTOR_SIDECAR = "RAYJOB_SELECTOR_SIDECAR"
    RAYJOB_SELECTOR_BACKOFF_LIMIT = "RAYJOB_SELECTOR_BACKOFF_LIMIT"
    RAYJOB_INTERACTIVE_BACKOFF_LIMIT = "RAYJOB_INTERACTIVE_BACKOFF_LIMIT"
    RAYJOB_SIDECAR_SUBMITTER_TEMPLATE = "RAYJOB_SIDECAR_SUBMITTER_TEMPLATE"
    RAYJOB_SIDECAR_SUBMITTER_CONFIG = "RAYJOB_SIDECAR_SUBMITTER_CONFIG"
    RAYJOB_SIDECAR_RESTART_POLICY = "RAYJOB_SIDECAR_RESTART_POLICY"
    RAYJOB_K8S_TOKEN_AUTH = "RAYJOB_K8S_TOKEN_AUTH"
    RAYJOB_INVALID_RUNTIME_ENV = "RAYJOB_INVALID_RUNTIME_ENV"
    RAYJOB_NONPOSITIVE_ACTIVE_DEADLINE = "RAYJOB_NONPOSITIVE_ACTIVE_DEADLINE"
    RAYJOB_NEGATIVE_BACKOFF_LIMIT = "RAYJOB_NEGATIVE_BACKOFF_LIMIT"
    RAYJOB_WAITING_NOT_INTERACTIVE = "RAYJOB_WAITING_NOT_INTERACTIVE"
    # RayService
    RAYSERVICE_NAME_TOO_LONG = "RAYSERVICE_NAME_TOO_LONG"
    RAYSERVICE_NAME_NOT_DNS1035 = "RAYSERVICE_NAME_NOT_DNS1035"
    RAYSERVICE_INVALID_INITIALIZING_TIMEOUT = "RAYSERVICE_INVALID_INITIALIZING_TIMEOUT"
    RAYSERVICE_K8S_TOKEN_AUTH = "RAYSERVICE_K8S_TOKEN_AUTH"
    RAYSERVICE_HEAD_SERVICE_NAME = "RAYSERVICE_HEAD_SERVICE_NAME"
    RAYSERVICE_UPGRADE_TYPE = "RAYSERVICE_UPGRADE_TYPE"
    RAYSERVICE_INCREMENTAL_NEEDS_AUTOSCALING = "RAYSERVICE_INCREMENTAL_NEEDS_AUTOSCALING"
    RAYSERVICE_INCREMENTAL_NO_OPTIONS = "RAYSERVICE_INCREMENTAL_NO_OPTIONS"
    RAYSERVICE_MAX_SURGE_RANGE = "RAYSERVICE_MAX_SURGE_RANGE"
    RAYSERVICE_STEP_SIZE_RANGE = "RAYSERVICE_STEP_SIZE_RANGE"
    RAYSERVICE_STEP_SIZE_ABOVE_MAX_SURGE = "RAYSERVICE_STEP_SIZE_ABOVE_MAX_SURGE"
    RAYSERVICE_NONPOSITIVE_INTERVAL = "RAYSERVICE_NONPOSITIVE_INTERVAL"
    RAYSERVICE_NO_GATEWAY_CLASS = "RAYSERVICE_NO_GATEWAY_CLASS"
    # RayCronJob
    RAYCRONJOB_NAME_TOO_LONG = "RAYCRONJOB_NAME_TOO_LONG"
    RAYCRONJOB_SCHEDULE_HAS_TZ = "RAYCRONJOB_SCHEDULE_HAS_TZ"
    RAYCRONJOB_INVALID_SCHEDULE = "RAYCRONJOB_INVALID_SCHEDULE"
    RAYCRONJOB_INVALID_TIME_ZONE = "RAYCRONJOB_INVALID_TIME_ZONE"
    # Any kind: the shape of a field (the models and the bundled Kubernetes schema)
    FIELD_UNKNOWN = "FIELD_UNKNOWN"
    FIELD_REQUIRED = "FIELD_REQUIRED"
    FIELD_WRONG_TYPE = "FIELD_WRONG_TYPE"
    FIELD_INVALID_VALUE = "FIELD_INVALID_VALUE"
    FIELD_INVALID_QUANTITY = "FIELD_INVALID_QUANTITY"
    FIELD_INVALID_ENUM = "FIELD_INVALID_ENUM"
    FIELD_NOT_OBJECT_NAME = "FIELD_NOT_OBJECT_NAME"
    KIND_UNKNOWN = "KIND_UNKNOWN"
    # Any YAML a user hands us (operator_runtime.api.useryaml)
    YAML_INVALID = "YAML_INVALID"
    YAML_TOO_LARGE = "YAML_TOO_LARGE"


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken rule, before it is attached to an object.

    ``path`` is in wire spelling, ``detail`` says what is wrong and ``hint`` what
    would be valid.
    """

    code: ErrorCode
    path: str
    detail: str
    hint: str


class RayApiError(Exception):
    """Base of the errors the API layer raises on purpose."""


class FeatureGateError(RayApiError, ValueError):
    """A ``--feature-gates`` value that cannot be parsed, or an unknown gate name."""


class InvalidObjectError(RayApiError, ValueError):
    """A ray.io/v1 object that KubeRay would refuse to reconcile."""

    scope: ClassVar[ValidationScope]

    def __init__(
        self,
        violation: Violation,
        *,
        kind: str,
        namespace: str,
        name: str,
        more: Sequence[Violation] = (),
    ) -> None:
        self.violation = violation
        """The first violation; ``violations`` has all of them."""
        self.violations: tuple[Violation, ...] = (violation, *more)
        self.kind = kind
        self.namespace = namespace
        self.name = name
        super().__init__(str(self))

    @property
    def code(self) -> ErrorCode:
        return self.violation.code

    @property
    def path(self) -> str:
        return self.violation.path

    @property
    def detail(self) -> str:
        return self.violation.detail

    @property
    def hint(self) -> str:
        return self.violation.hint

    @property
    def object_ref(self) -> str:
        """``RayCluster default/foo`` (``RayCluster foo`` without a namespace)."""
        name = self.name or "<unnamed>"
        return f"{self.kind} {self.namespace}/{name}" if self.namespace else f"{self.kind} {name}"

    @property
    def event_reason(self) -> str:
        """The Warning event reason KubeRay uses, e.g. ``InvalidRayClusterSpec``."""
        return f"Invalid{self.kind}{self.scope.value}"

    def lines(self) -> tuple[str, ...]:
        """One line per violation: ``<object>: <path>: <what is wrong>; <fix> [CODE]``."""
        return tuple(
            f"{self.object_ref}: {v.path}: {v.detail}; {v.hint} [{v.code.value}]"
            for v in self.violations
        )

    def __str__(self) -> str:
        return "\n".join(self.lines())


class InvalidMetadataError(InvalidObjectError):
    """The object's metadata (name, annotations) is invalid."""

    scope = ValidationScope.METADATA


class InvalidSpecError(InvalidObjectError):
    """The object's spec is invalid."""

    scope = ValidationScope.SPEC


class InvalidStatusError(InvalidObjectError):
    """The object's status is inconsistent."""

    scope = ValidationScope.STATUS


ERROR_CLASSES: Final[Mapping[ValidationScope, type[InvalidObjectError]]] = MappingProxyType(
    {
        ValidationScope.METADATA: InvalidMetadataError,
        ValidationScope.SPEC: InvalidSpecError,
        ValidationScope.STATUS: InvalidStatusError,
    }
)
