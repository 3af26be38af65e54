"""How the controllers render: the feature gates and ``RenderOptions`` every controller
derives the same way from what the operator was started with.

The settings themselves are ``runtime/settings.py``'s ``OperatorEnvironment`` (KubeRay's
environment variables, read once by ``main`` and found on the controller's context) and
the ``--config`` file's ``OperatorConfiguration``; this module only turns them into
what render takes."""

from __future__ import annotations

from types import MappingProxyType

from operator_runtime.api import FeatureGates
from operator_runtime.render import RenderOptions
from operator_runtime.render.batchscheduler import chosen_scheduler
from operator_runtime.runtime.configuration import OperatorConfiguration
from operator_runtime.runtime.context import ControllerContext
from operator_runtime.runtime.settings import OperatorEnvironment


def gates_of(context: ControllerContext) -> FeatureGates:
    """The feature gates the operator was started with."""
    flag = ",".join(f"{k}={str(v).lower()}" for k, v in sorted(context.feature_gates.items()))
    return FeatureGates.parse(flag)


def render_options(
    settings: OperatorEnvironment,
    gates: FeatureGates | None = None,
    configuration: OperatorConfiguration | None = None,
) -> RenderOptions:
    """How every controller renders what it creates: KubeRay's variables, its feature
    gates and what its ``Configuration`` adds to every Ray pod."""
    config = configuration or OperatorConfiguration()
    return RenderOptions(
        default_container_envs=config.default_container_envs,
        head_sidecar_containers=config.head_sidecar_containers,
        worker_sidecar_containers=config.worker_sidecar_containers,
        default_pod_annotations=MappingProxyType(dict(config.default_pod_annotations)),
        default_pod_labels=MappingProxyType(dict(config.default_pod_labels)),
        cluster_domain=settings.cluster_domain,
        feature_gates=gates or FeatureGates(),
        enable_init_container_injection=settings.enable_init_container_injection,
        enable_probes_injection=settings.enable_probes_injection,
        enable_login_shell=settings.enable_login_shell,
        deterministic_head_pod_name=settings.enable_deterministic_head_pod_name,
        head_cluster_ip_service=settings.enable_ray_head_cluster_ip_service,
        batch_scheduler=chosen_scheduler(
            config.batch_scheduler,
            config.enable_batch_scheduler,
            kubernetes_was=bool(gates and gates.kubernetes_was),
        ),
    )
