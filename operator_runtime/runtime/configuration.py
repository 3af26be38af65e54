"""KubeRay's ``Configuration`` file (``config.ray.io/v1alpha1``), the ``--config`` flag.

With ``--config`` KubeRay takes every setting the file can hold from the file and ignores
the corresponding flags; what the file leaves out gets KubeRay's default, not the flag's
value. Two exceptions, kept here as KubeRay has them: the stdout and file log encoders
always come from the flags, and ``deleteRayJobAfterJobFinishes`` is read but changes
nothing (the RayJob controller reads ``DELETE_RAYJOB_CR_AFTER_JOB_FINISHES``).

Decoding follows KubeRay's: ``apiVersion`` and ``kind`` must name the type, field names
are case-sensitive, unknown fields are ignored, a value of the wrong type is an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from operator_runtime.api.useryaml import UserYamlError, load_yaml

API_VERSION: Final = "config.ray.io/v1alpha1"
KIND: Final = "Configuration"

DEFAULT_METRICS_ADDR: Final = ":8080"
DEFAULT_PROBE_ADDR: Final = ":8082"
DEFAULT_ENABLE_LEADER_ELECTION: Final = True
DEFAULT_RECONCILE_CONCURRENCY: Final = 1
DEFAULT_QPS: Final = 100.0
DEFAULT_BURST: Final = 200


class ConfigurationError(ValueError):
    """The file cannot be read or does not decode; the message is one line."""


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
