"""Settings of the RayService controller, taken from the operator's settings when it is
built."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from operator_runtime.api import FeatureGates
from operator_runtime.controllers.rendering import render_options
from operator_runtime.render import RenderOptions
from operator_runtime.runtime.configuration import OperatorConfiguration
from operator_runtime.runtime.settings import OperatorEnvironment

REQUEUE_SECONDS: Final = 2.0
"""KubeRay's RayService requeue: serve status is polled this often."""
SERVE_CONFIG_CACHE_SIZE: Final = 1000
DELETE_AFTER_ANNOTATION: Final = "pulumi-ray.io/delete-after"
"""On a RayService's cluster that is neither active nor pending: when it is due for
deletion (RFC 3339). KubeRay keeps this in memory and forgets it on a restart."""


@dataclass(frozen=True, slots=True)
class RayServiceOptions:
    render: RenderOptions = field(default_factory=RenderOptions)
    zero_downtime: bool = True
    """``ENABLE_ZERO_DOWNTIME``: "false" updates nothing when the cluster spec changes
    and no upgrade strategy is set."""
    requeue_seconds: float = REQUEUE_SECONDS
    serve_config_cache_size: int = SERVE_CONFIG_CACHE_SIZE
    """RayServices whose serve configs are kept in memory (KubeRay's LRU of 1000). Only
    an optimisation: what each cluster was given is read from its annotations."""

    @property
    def gates(self) -> FeatureGates:
        return self.render.feature_gates

    @classmethod
    def from_settings(
        cls,
        settings: OperatorEnvironment,
        gates: FeatureGates | None = None,
        configuration: OperatorConfiguration | None = None,
    ) -> RayServiceOptions:
        return cls(
            render=render_options(settings, gates, configuration),
            zero_downtime=settings.enable_zero_downtime,
        )

    @classmethod
    def from_environment(
        cls, environ: Mapping[str, str], gates: FeatureGates | None = None
    ) -> RayServiceOptions:
        """``from_settings`` of a mapping of KubeRay's variables (for tests)."""
        return cls.from_settings(OperatorEnvironment.from_mapping(environ), gates)
