"""Settings of the RayJob controller, taken from the operator's settings when it is built
(KubeRay reads the same environment variables at the moment it needs them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from operator_runtime.api import FeatureGates
from operator_runtime.controllers.rendering import render_options
from operator_runtime.render import RenderOptions
from operator_runtime.runtime.configuration import OperatorConfiguration
from operator_runtime.runtime.settings import OperatorEnvironment

REQUEUE_SECONDS: Final = 3.0
"""KubeRay's RayJob requeue: a running job is polled this often."""
SUBMITTER_FINISHED_TIMEOUT: Final = 30.0
"""After the submitter ends, the Ray job has this long to reach a terminal status."""
DELETION_SLACK_SECONDS: Final = 2.0
"""A deletion due at T is looked at again at T + 2 s (KubeRay's requeueDelayFor)."""
DEFAULT_GRACE_SECONDS: Final = 300.0
DEFAULT_STATUS_CHECK_TIMEOUT_SECONDS: Final = 300.0


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
    def from_settings(
        cls,
        settings: OperatorEnvironment,
        gates: FeatureGates | None = None,
        configuration: OperatorConfiguration | None = None,
    ) -> RayJobOptions:
        # KubeRay takes any integer for the grace period, only a positive one for the
        # status check timeout (OperatorEnvironment parses both its way).
        return cls(
            render=render_options(settings, gates, configuration),
            delete_rayjob_after_finish=settings.delete_rayjob_cr_after_job_finishes,
            transition_grace_seconds=float(
                settings.rayjob_deployment_status_transition_grace_period_seconds
            ),
            status_check_timeout_seconds=float(settings.rayjob_status_check_timeout_seconds),
        )
