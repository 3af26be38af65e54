"""Settings of the RayJob controller, read once when it is built (KubeRay reads the same
environment variables at the moment it needs them)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from operator_runtime.api import FeatureGates
from operator_runtime.controllers.settings import env_flag, render_options_from_environment
from operator_runtime.render import RenderOptions

REQUEUE_SECONDS: Final = 3.0
"""KubeRay's RayJob requeue: a running job is polled this often."""
SUBMITTER_FINISHED_TIMEOUT: Final = 30.0
"""After the submitter ends, the Ray job has this long to reach a terminal status."""
DELETION_SLACK_SECONDS: Final = 2.0
"""A deletion due at T is looked at again at T + 2 s (KubeRay's requeueDelayFor)."""
DEFAULT_GRACE_SECONDS: Final = 300.0
DEFAULT_STATUS_CHECK_TIMEOUT_SECONDS: Final = 300.0


def _seconds(environ: Mapping[str, str], name: str, default: float, *, positive: bool) -> float:
    try:
        value = int(environ.get(name, ""))
    except ValueError:
        return default
    return default if positive and value <= 0 else float(value)


@dataclass(frozen=True, slots=True)
class RayJobOptions:
    render: RenderOptions = field(default_factory=RenderOptions)
    delete_rayjob_after_finish: bool = False
    """``DELETE_RAYJOB_CR_AFTER_JOB_FINISHES``: shutdownAfterJobFinishes deletes the
    RayJob itself (and so everything it owns) instead of only its cluster."""
    transition_grace_seconds: float = DEFAULT_GRACE_SECONDS
    """``RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS``."""
    status_check_timeout_seconds: float = DEFAULT_STATUS_CHECK_TIMEOUT_SECONDS
    """``RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS``: how long the dashboard may fail to answer."""
    requeue_seconds: float = REQUEUE_SECONDS

    @property
    def gates(self) -> FeatureGates:
        return self.render.feature_gates

    @classmethod
    def from_environment(
        cls, environ: Mapping[str, str], gates: FeatureGates | None = None
    ) -> RayJobOptions:
        return cls(
            render=render_options_from_environment(environ, gates),
            delete_rayjob_after_finish=env_flag(
                environ, "DELETE_RAYJOB_CR_AFTER_JOB_FINISHES", default=False
            ),
            # KubeRay takes any integer for the grace period, only a positive one for
            # the status check timeout.
            transition_grace_seconds=_seconds(
                environ,
                "RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS",
                DEFAULT_GRACE_SECONDS,
                positive=False,
            ),
            status_check_timeout_seconds=_seconds(
                environ,
                "RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS",
                DEFAULT_STATUS_CHECK_TIMEOUT_SECONDS,
                positive=True,
            ),
        )
