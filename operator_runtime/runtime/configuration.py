"""KubeRay's ``Configuration`` file (``config.ray.io/v1alpha1``), the ``--config`` flag.

With ``--config`` KubeRay takes every setting the file can hold from the file and ignores
the corresponding flags; what the file leaves out gets KubeRay's default, not the flag's
value. Two exceptions, kept here as KubeRay has them: the stdout and file log encoders
always come from the flags, and ``deleteRayJobAfterJobFinishes`` is read but changes
nothing (the RayJob controller reads ``DELETE_RAYJOB_CR_AFTER_JOB_FINISHES``).

Decoding follows KubeRay's: ``apiVersion`` and ``kind`` must name the type, field names
are case-sensitive, unknown fields are ignored, a value of the wrong type is an error.

One field is ours, not KubeRay's: ``redisCleanupJobResources``, the resources of the
Redis cleanup Job's container. KubeRay fixes them at 200m CPU / 256Mi, which admission
on some platforms refuses (GKE Autopilot wants at least 250m CPU: KubeRay issue #4721);
the platform team that runs the operator knows its cluster's rules, so the setting lives
here rather than on each RayCluster. It is checked strictly, unknown keys
included: a typo would otherwise leave the Job without the resources the platform needs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from pydantic_core import PydanticCustomError

from operator_runtime.api.useryaml import UserYamlError, load_yaml
from operator_runtime.api.validation import qualified_name_error
from operator_runtime.render.quantity import QuantityError, parse_quantity

API_VERSION: Final = "config.ray.io/v1alpha1"
KIND: Final = "Configuration"

DEFAULT_METRICS_ADDR: Final = ":8080"
DEFAULT_PROBE_ADDR: Final = ":8082"
DEFAULT_ENABLE_LEADER_ELECTION: Final = True
DEFAULT_RECONCILE_CONCURRENCY: Final = 1
DEFAULT_QPS: Final = 100.0
DEFAULT_BURST: Final = 200

Resources = dict[str, dict[str, str]]
"""A container's ``resources`` with only ``requests`` and ``limits``: name -> quantity."""

_KUBERAY_CLEANUP_QUANTITIES: Final = (("cpu", "200m"), ("memory", "256Mi"))
_RESOURCE_SECTIONS: Final = ("limits", "requests")
_STANDARD_RESOURCES: Final = frozenset({"cpu", "memory", "ephemeral-storage"})
_MAX_RESOURCE_NAMES: Final = 16


def default_redis_cleanup_job_resources() -> Resources:
    """KubeRay's fixed size: the script is light, and a GPU must not be held for it."""
    return {section: dict(_KUBERAY_CLEANUP_QUANTITIES) for section in _RESOURCE_SECTIONS}


class ConfigurationError(ValueError):
    """The file cannot be read or does not decode; the message is one line."""


def _resources_error(where: str, problem: str) -> PydanticCustomError:
    # No context: the message is final, and braces in the user's names stay as written.
    return PydanticCustomError("resources", f"{where}: {problem}" if where else problem)


def _quantity(value: object, where: str) -> tuple[str, Fraction]:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise _resources_error(
            where, f"expected a quantity such as 500m or 1Gi, got {json.dumps(value, default=str)}"
        )
    text = (
        value if isinstance(value, str) else str(value) if isinstance(value, int) else repr(value)
    )
    try:  # the parser bounds the length and the exponent itself
        exact = parse_quantity(text)
    except QuantityError as exc:
        raise _resources_error(where, str(exc)) from None
    if exact < 0:
        raise _resources_error(where, f"{text!r} is negative")
    return text, exact


def _resource_name_problem(name: str) -> str | None:
    if name in _STANDARD_RESOURCES or name.startswith("hugepages-"):
        return None
    if "/" not in name:
        return (
            f"{name!r} is not a container resource (cpu, memory, ephemeral-storage, "
            "hugepages-<size>, or an extended resource such as example.com/device)"
        )
    problem = qualified_name_error(name)
    return None if problem is None else f"not a resource name: {problem}"


def _check_resources(value: object) -> Resources:
    """A ResourceRequirements with requests and limits only, every name a container
    resource, every quantity parsed and not negative, no request above its limit."""
    if not isinstance(value, dict):
        raise _resources_error("", "expected a mapping with requests and limits")
    unknown = sorted(str(key) for key in value if key not in _RESOURCE_SECTIONS)
    if unknown:
        raise _resources_error(unknown[0], "unknown field; only requests and limits are set here")
    checked: Resources = {}
    exact: dict[str, dict[str, Fraction]] = {}
    for section in _RESOURCE_SECTIONS:
        given = value.get(section)
        if given is None:
            continue
        if not isinstance(given, dict):
            raise _resources_error(section, "expected a mapping of resource names to quantities")
        if len(given) > _MAX_RESOURCE_NAMES:
            raise _resources_error(section, f"at most {_MAX_RESOURCE_NAMES} resources")
        checked[section], exact[section] = {}, {}
        for name, quantity in given.items():
            where = f"{section}.{name}"
            problem = _resource_name_problem(str(name))
            if problem is not None:
                raise _resources_error(where, problem)
            checked[section][str(name)], exact[section][str(name)] = _quantity(quantity, where)
    for name, request in exact.get("requests", {}).items():
        limit = exact.get("limits", {}).get(name)
        if limit is not None and request > limit:
            raise _resources_error(
                f"requests.{name}",
                f"{checked['requests'][name]} is more than limits.{name} {checked['limits'][name]}",
            )
    return checked


class KubeRayConfiguration(BaseModel):
    """The fields of KubeRay's ``Configuration``, with its JSON names."""

    model_config = ConfigDict(extra="ignore", frozen=True, strict=True)

    api_version: Literal["config.ray.io/v1alpha1"] = Field(alias="apiVersion")
    kind: Literal["Configuration"]
    metrics_addr: str = Field("", alias="metricsAddr")
    probe_addr: str = Field("", alias="probeAddr")
    enable_leader_election: bool | None = Field(None, alias="enableLeaderElection")
    leader_election_namespace: str = Field("", alias="leaderElectionNamespace")
    reconcile_concurrency: int = Field(0, alias="reconcileConcurrency")
    watch_namespace: str = Field("", alias="watchNamespace")
    log_file: str = Field("", alias="logFile")
    log_file_encoder: str = Field("", alias="logFileEncoder")
    log_stdout_encoder: str = Field("", alias="logStdoutEncoder")
    enable_batch_scheduler: bool = Field(False, alias="enableBatchScheduler")
    batch_scheduler: str = Field("", alias="batchScheduler")
    use_kubernetes_proxy: bool = Field(False, alias="useKubernetesProxy")
    delete_ray_job_after_job_finishes: bool = Field(False, alias="deleteRayJobAfterJobFinishes")
    enable_metrics: bool = Field(False, alias="enableMetrics")
    qps: float | None = Field(None, alias="qps")
    burst: int | None = Field(None, alias="burst")
    head_sidecar_containers: list[dict[str, Any]] = Field([], alias="headSidecarContainers")
    worker_sidecar_containers: list[dict[str, Any]] = Field([], alias="workerSidecarContainers")
    default_container_envs: list[dict[str, Any]] = Field([], alias="defaultContainerEnvs")
    default_pod_annotations: dict[str, str] = Field({}, alias="defaultPodAnnotations")
    default_pod_labels: dict[str, str] = Field({}, alias="defaultPodLabels")
    redis_cleanup_job_resources: Annotated[Resources, BeforeValidator(_check_resources)] | None = (
        Field(None, alias="redisCleanupJobResources")
    )
    """pulumi-ray's own field (see the module's docstring)."""


@dataclass(frozen=True, slots=True)
class OperatorConfiguration:
    """The settings KubeRay's ``Configuration`` holds, defaults applied: what the
    operator runs with, from the file or from the flags."""

    metrics_addr: str = DEFAULT_METRICS_ADDR
    probe_addr: str = DEFAULT_PROBE_ADDR
    enable_leader_election: bool = DEFAULT_ENABLE_LEADER_ELECTION
    leader_election_namespace: str = ""
    reconcile_concurrency: int = DEFAULT_RECONCILE_CONCURRENCY
    watch_namespace: str = ""
    """Comma-separated; empty is every namespace."""
    log_file: str = ""
    enable_batch_scheduler: bool = False
    batch_scheduler: str = ""
    use_kubernetes_proxy: bool = False
    enable_metrics: bool = False
    qps: float = DEFAULT_QPS
    burst: int = DEFAULT_BURST
    head_sidecar_containers: tuple[dict[str, Any], ...] = ()
    worker_sidecar_containers: tuple[dict[str, Any], ...] = ()
    default_container_envs: tuple[dict[str, Any], ...] = ()
    default_pod_annotations: tuple[tuple[str, str], ...] = ()
    default_pod_labels: tuple[tuple[str, str], ...] = ()
    redis_cleanup_job_resources: Resources = field(
        default_factory=default_redis_cleanup_job_resources
    )
    """pulumi-ray's extension: the cleanup Job container's resources (KubeRay's fixed
    200m / 256Mi unless the file says otherwise)."""
    from_file: bool = False

    @classmethod
    def from_file_model(cls, config: KubeRayConfiguration) -> OperatorConfiguration:
        """KubeRay's ``SetDefaults_Configuration`` applied to a decoded file."""
        return cls(
            metrics_addr=config.metrics_addr or DEFAULT_METRICS_ADDR,
            probe_addr=config.probe_addr or DEFAULT_PROBE_ADDR,
            enable_leader_election=(
                DEFAULT_ENABLE_LEADER_ELECTION
                if config.enable_leader_election is None
                else config.enable_leader_election
            ),
            leader_election_namespace=config.leader_election_namespace,
            reconcile_concurrency=config.reconcile_concurrency or DEFAULT_RECONCILE_CONCURRENCY,
            watch_namespace=config.watch_namespace,
            log_file=config.log_file,
            enable_batch_scheduler=config.enable_batch_scheduler,
            batch_scheduler=config.batch_scheduler,
            use_kubernetes_proxy=config.use_kubernetes_proxy,
            enable_metrics=config.enable_metrics,
            qps=DEFAULT_QPS if config.qps is None else config.qps,
            burst=DEFAULT_BURST if config.burst is None else config.burst,
            head_sidecar_containers=tuple(config.head_sidecar_containers),
            worker_sidecar_containers=tuple(config.worker_sidecar_containers),
            default_container_envs=tuple(config.default_container_envs),
            default_pod_annotations=tuple(sorted(config.default_pod_annotations.items())),
            default_pod_labels=tuple(sorted(config.default_pod_labels.items())),
            redis_cleanup_job_resources=(
                default_redis_cleanup_job_resources()
                if config.redis_cleanup_job_resources is None
                else config.redis_cleanup_job_resources
            ),
            from_file=True,
        )


def _location(error: Any) -> str:
    return ".".join(str(part) for part in error["loc"]) or "(top level)"


def decode_configuration(text: str) -> OperatorConfiguration:
    """Decode the file's text; ``ConfigurationError`` with one line if it does not."""
    try:
        document = load_yaml(text)
    except UserYamlError as exc:
        where = f" at line {exc.line}, column {exc.column}" if exc.line is not None else ""
        raise ConfigurationError(f"not valid YAML{where}: {exc.problem}") from None
    if not isinstance(document, dict):
        raise ConfigurationError(
            f"expected a {KIND} object (apiVersion: {API_VERSION}, kind: {KIND})"
        )
    if document.get("apiVersion") != API_VERSION or document.get("kind") != KIND:
        raise ConfigurationError(
            f"apiVersion must be {API_VERSION} and kind {KIND}, got "
            f"{document.get('apiVersion')!r} and {document.get('kind')!r}"
        )
    try:
        model = KubeRayConfiguration.model_validate(document)
    except ValidationError as exc:
        problems = "; ".join(f"{_location(e)}: {e['msg']}" for e in exc.errors())
        raise ConfigurationError(problems) from None
    return OperatorConfiguration.from_file_model(model)


def load_configuration_file(path: str) -> OperatorConfiguration:
    """Read and decode ``--config``; ``ConfigurationError`` with one line on failure."""
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigurationError(f"cannot read {path}: {reason}") from None
    try:
        return decode_configuration(text)
    except ConfigurationError as exc:
        raise ConfigurationError(f"{path}: {exc}") from None
