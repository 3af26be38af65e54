"""Settings of the RayCluster controller, taken from the operator's settings when it is
built.

KubeRay reads these environment variables at the moment it needs them; ``main`` reads
them once (``OperatorEnvironment``), which keeps the reconciler free of process-wide
state and lets tests vary them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from operator_runtime.api import FeatureGates, JSONObject
from operator_runtime.controllers.rendering import render_options
from operator_runtime.render import RenderOptions
from operator_runtime.runtime.cache import Projection, keep_paths
from operator_runtime.runtime.configuration import (
    OperatorConfiguration,
    Resources,
    default_redis_cleanup_job_resources,
)
from operator_runtime.runtime.kinds import Object
from operator_runtime.runtime.settings import OperatorEnvironment

DEFAULT_REQUEUE_SECONDS: Final = 300.0
"""``RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV``: the periodic resync of every cluster."""
SHORT_REQUEUE_SECONDS: Final = 2.0
"""Look again soon after a status change or a failed step (KubeRay's 2 s)."""
HEAD_TERMINATION_REQUEUE_SECONDS: Final = 10.0
"""A head pod takes far longer than 2 s to terminate; poll it less often."""
POD_CREATES_PER_PASS: Final = 100
"""At most this many pods are queued for creation by one pass over a cluster; the rest
waits for the next pass (the cache shows the new pods, then the key comes round again).
One cluster asking for millions of replicas then never holds millions of queued creates,
and clusters behind it still get their turn (``creates.py``)."""


_POD_FIELDS_READ = keep_paths(
    [
        "metadata.annotations",
        "spec.nodeName",
        "spec.restartPolicy",
        "status.phase",
        "status.conditions",
        "status.containerStatuses",
        "status.podIP",
    ]
)


def ray_pod_projection(pod: Object) -> Object:
    """What the controller reads from a pod, and nothing more: identity metadata with
    labels and annotations, container names and the restart policy (shouldDeletePod),
    node, phase, conditions, container states and IP. Commands, env and probes are most of
    a Ray pod's bytes and never read back; dropping them halves the memory each cached pod
    costs (benchmarks/README.md)."""
    projected = _POD_FIELDS_READ(pod)
    containers = (pod.get("spec") or {}).get("containers") or ()
    projected.setdefault("spec", {})["containers"] = [
        {"name": container.get("name")} for container in containers
    ]
    return projected


def _cleanup_resources(resources: Resources) -> JSONObject:
    return {section: dict(quantities) for section, quantities in resources.items()}


def _default_cleanup_resources() -> JSONObject:
    return _cleanup_resources(default_redis_cleanup_job_resources())


@dataclass(frozen=True, slots=True)
class RayClusterOptions:
    """Everything the controller is configured with besides its injected runtime."""

    render: RenderOptions = field(default_factory=RenderOptions)
    requeue_seconds: float = DEFAULT_REQUEUE_SECONDS
    gcs_ft_redis_cleanup: bool = True
    """``ENABLE_GCS_FT_REDIS_CLEANUP`` (``false`` leaves Redis to the user)."""
    random_pod_delete: bool = False
    """``ENABLE_RANDOM_POD_DELETE``: scale down by count even with the autoscaler on."""
    redis_cleanup_resources: JSONObject = field(default_factory=_default_cleanup_resources)
    """Resources of the cleanup Job's container: the configuration file's
    ``redisCleanupJobResources``, else KubeRay's fixed 200m/256Mi."""
    cert_manager_available: bool | None = None
    """Whether ``cert-manager.io/v1`` is served (mTLS needs it); None: the controller asks
    the API server once, when it is built, if the ``RayClusterMTLS`` gate is on."""
    pod_projection: Projection = ray_pod_projection
    """How pods are trimmed in the cache. Tests wrap it to delay pod events and prove the
    expectations hold under a slow informer."""

    @property
    def gates(self) -> FeatureGates:
        return self.render.feature_gates

    @classmethod
    def from_settings(
        cls,
        settings: OperatorEnvironment,
        gates: FeatureGates | None = None,
        configuration: OperatorConfiguration | None = None,
    ) -> RayClusterOptions:
        """The options KubeRay's environment variables and configuration file describe."""
        config = configuration or OperatorConfiguration()
        return cls(
            render=render_options(settings, gates, configuration),
            requeue_seconds=float(settings.raycluster_default_requeue_seconds),
            gcs_ft_redis_cleanup=settings.enable_gcs_ft_redis_cleanup,
            random_pod_delete=settings.enable_random_pod_delete,
            redis_cleanup_resources=_cleanup_resources(config.redis_cleanup_job_resources),
        )

    @classmethod
    def from_environment(
        cls, environ: Mapping[str, str], gates: FeatureGates | None = None
    ) -> RayClusterOptions:
        """``from_settings`` of a mapping of KubeRay's variables (for tests)."""
        return cls.from_settings(OperatorEnvironment.from_mapping(environ), gates)
