"""KubeRay's operator environment variables as one typed object, read once at start-up.

KubeRay reads each variable with ``os.Getenv`` at the moment it needs it, and each with
its own rule: some are on unless set to "false", others off unless set to "true", the
numbers go through Go's ``strconv.Atoi`` and fall back to a default when that fails.
``OperatorEnvironment`` keeps those rules in one place. ``python -m operator_runtime``
builds it from the process environment once and hands it to every controller through
``ControllerContext.settings``; nothing else in the operator reads the environment.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Final

from pydantic import BeforeValidator, Field
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

DEFAULT_CLUSTER_DOMAIN: Final = "cluster.local"
DEFAULT_SECONDS: Final = 300
"""The default of all three KubeRay timing variables."""

_GO_INT = re.compile(r"[+-]?[0-9]+")
_INT64 = 2**63


def go_atoi(value: str) -> int | None:
    """Go's ``strconv.Atoi`` on a 64-bit build: an optional sign and decimal digits, no
    spaces or underscores, within int64; ``None`` where Go returns an error."""
    if not _GO_INT.fullmatch(value):
        return None
    number = int(value)
    return number if -_INT64 <= number < _INT64 else None


def on_unless_false(value: object) -> object:
    """``strings.ToLower(v) == "false"`` turns it off; anything else, or unset, is on."""
    return value if isinstance(value, bool) else str(value).lower() != "false"


def off_unless_true(value: object) -> object:
    """Only ``strings.ToLower(v) == "true"`` turns it on."""
    return value if isinstance(value, bool) else str(value).lower() == "true"


def exactly_true(value: object) -> object:
    """KubeRay compares without lowering the case: only the string ``true`` is on."""
    return value if isinstance(value, bool) else str(value) == "true"


def _atoi_or(default: int, *, positive: bool = False) -> Callable[[object], object]:
    def parse(value: object) -> object:
        if isinstance(value, int):
            return value
        number = go_atoi(str(value))
        if number is None or (positive and number <= 0):
            return default
        return number

    return parse


def _non_empty_or(default: str) -> Callable[[object], object]:
    def parse(value: object) -> object:
        return str(value) or default

    return parse


OnUnlessFalse = Annotated[bool, BeforeValidator(on_unless_false)]
OffUnlessTrue = Annotated[bool, BeforeValidator(off_unless_true)]


class OperatorEnvironment(BaseSettings):
    """The operator's environment variables, each parsed the way KubeRay v1.7.0 does.

    ``OperatorEnvironment()`` reads the process environment (case-sensitive, as on
    Linux); ``from_mapping`` reads a mapping only, for tests; ``defaults()`` is what an
    empty environment gives."""

    model_config = SettingsConfigDict(case_sensitive=True, extra="ignore", frozen=True)

    enable_init_container_injection: OnUnlessFalse = Field(
        default=True, validation_alias="ENABLE_INIT_CONTAINER_INJECTION"
    )
    """Workers get the init container that waits for the GCS; "false" leaves it out."""
    enable_probes_injection: OnUnlessFalse = Field(
        default=True, validation_alias="ENABLE_PROBES_INJECTION"
    )
    """Ray containers get KubeRay's liveness and readiness probes; "false" leaves them out."""
    enable_gcs_ft_redis_cleanup: OnUnlessFalse = Field(
        default=True, validation_alias="ENABLE_GCS_FT_REDIS_CLEANUP"
    )
    """A GCS-FT cluster's deletion runs the Redis cleanup Job; "false" leaves Redis as is."""
    enable_zero_downtime: OnUnlessFalse = Field(
        default=True, validation_alias="ENABLE_ZERO_DOWNTIME"
    )
    """A RayService's changed cluster spec starts a new cluster; "false" changes nothing
    when no upgrade strategy is set."""
    enable_random_pod_delete: OffUnlessTrue = Field(
        default=False, validation_alias="ENABLE_RANDOM_POD_DELETE"
    )
    """Scale down by count even with the autoscaler on."""
    enable_ray_head_cluster_ip_service: OffUnlessTrue = Field(
        default=False, validation_alias="ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE"
    )
    """The head Service gets a cluster IP instead of being headless."""
    enable_deterministic_head_pod_name: OffUnlessTrue = Field(
        default=False, validation_alias="ENABLE_DETERMINISTIC_HEAD_POD_NAME"
    )
    """The head pod is named ``<cluster>-head`` instead of with a random suffix."""
    enable_login_shell: OffUnlessTrue = Field(default=False, validation_alias="ENABLE_LOGIN_SHELL")
    """Ray containers start through ``bash -lc`` instead of ``bash -c``."""
    delete_rayjob_cr_after_job_finishes: OffUnlessTrue = Field(
        default=False, validation_alias="DELETE_RAYJOB_CR_AFTER_JOB_FINISHES"
    )
    """shutdownAfterJobFinishes deletes the RayJob itself, not only its cluster."""
    raycluster_default_requeue_seconds: Annotated[
        int, BeforeValidator(_atoi_or(DEFAULT_SECONDS))
    ] = Field(default=DEFAULT_SECONDS, validation_alias="RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV")
    """The periodic resync of every RayCluster (any integer; not one: 300)."""
    rayjob_deployment_status_transition_grace_period_seconds: Annotated[
        int, BeforeValidator(_atoi_or(DEFAULT_SECONDS))
    ] = Field(
        default=DEFAULT_SECONDS,
        validation_alias="RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS",
    )
    """How long a finished Ray job may wait for its submitter before the RayJob moves on."""
    rayjob_status_check_timeout_seconds: Annotated[
        int, BeforeValidator(_atoi_or(DEFAULT_SECONDS, positive=True))
    ] = Field(default=DEFAULT_SECONDS, validation_alias="RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS")
    """How long the dashboard may fail to answer (a positive integer; else 300)."""
    cluster_domain: Annotated[str, BeforeValidator(_non_empty_or(DEFAULT_CLUSTER_DOMAIN))] = Field(
        default=DEFAULT_CLUSTER_DOMAIN, validation_alias="CLUSTER_DOMAIN"
    )
    """The cluster's DNS domain in the FQDNs the operator writes (empty: cluster.local)."""
    enable_webhooks: Annotated[bool, BeforeValidator(exactly_true)] = Field(
        default=False, validation_alias="ENABLE_WEBHOOKS"
    )
    """KubeRay serves its admission webhooks; this operator has none (not applicable)."""
    use_ingress_on_openshift: OffUnlessTrue = Field(
        default=False, validation_alias="USE_INGRESS_ON_OPENSHIFT"
    )
    """OpenShift: an Ingress instead of a Route; no Routes here (not applicable)."""
    tz: str | None = Field(default=None, validation_alias="TZ")
    """Go's ``time.Local``: the zone of a RayCronJob without ``spec.timeZone``."""

    @classmethod
    def from_mapping(cls, environ: Mapping[str, str]) -> OperatorEnvironment:
        """The settings ``environ`` describes, ignoring the process environment."""
        parsed = _MappingOnly.model_validate(dict(environ))
        return cls.model_construct(**{name: getattr(parsed, name) for name in cls.model_fields})

    @classmethod
    def defaults(cls) -> OperatorEnvironment:
        """What KubeRay does with none of its variables set."""
        return cls.from_mapping({})

    @classmethod
    def variables(cls) -> dict[str, Any]:
        """Each variable's name and its default, in declaration order (for the docs)."""
        return {str(info.validation_alias): info.default for info in cls.model_fields.values()}


class _MappingOnly(OperatorEnvironment):
    """Reads its input and nothing else: no environment, no dotenv, no secrets."""

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings,)
