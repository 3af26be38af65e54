"""The reconcilers of the ray.io/v1 kinds, registered with the runtime by ``register``.

``python -m operator_runtime`` imports this package and calls ``register(registry)``;
each controller is built from the ``ControllerContext`` the manager hands out, so its
caches, client, clock and event recorder are injected, never global.
"""

from __future__ import annotations

import logging

from prometheus_client import CollectorRegistry

from operator_runtime.controllers import mtls, networkpolicy, raycronjob
from operator_runtime.controllers.certmanager import cert_manager_served
from operator_runtime.controllers.mtls import MTLSController
from operator_runtime.controllers.networkpolicy import NetworkPolicyController
from operator_runtime.controllers.raycluster import RayClusterController
from operator_runtime.controllers.raycronjob import RayCronJobController
from operator_runtime.controllers.rayjob import RayJobController
from operator_runtime.controllers.rayservice import RayServiceController
from operator_runtime.controllers.rendering import gates_of
from operator_runtime.runtime.context import ControllerContext
from operator_runtime.runtime.registry import ControllerRegistry

__all__ = ["register"]

log = logging.getLogger(__name__)


def _metrics(context: ControllerContext) -> CollectorRegistry | None:
    """Where a controller adds its ``kuberay_*`` collectors: ``/metrics`` with
    ``--enable-metrics``, nowhere without (KubeRay's rule)."""
    return context.metrics_registry if context.enable_metrics else None


def _raycluster(context: ControllerContext) -> RayClusterController:
    return RayClusterController(context, metrics_registry=_metrics(context))


def _rayjob(context: ControllerContext) -> RayJobController:
    return RayJobController(context, metrics_registry=_metrics(context))


def _raycronjob(context: ControllerContext) -> RayCronJobController | None:
    """Only with the ``RayCronJob`` gate on, as KubeRay starts it."""
    if not raycronjob.enabled(gates_of(context)):
        return None
    return RayCronJobController(context)


def _networkpolicy(context: ControllerContext) -> NetworkPolicyController | None:
    """Only with the ``RayClusterNetworkPolicy`` gate on, as KubeRay starts it."""
    if not networkpolicy.enabled(gates_of(context)):
        return None
    return NetworkPolicyController(context)


def _mtls(context: ControllerContext) -> MTLSController | None:
    """Only with the ``RayClusterMTLS`` gate on and cert-manager served, as KubeRay
    starts it (the RayCluster controller refuses TLS clusters without cert-manager)."""
    if not mtls.enabled(gates_of(context)):
        return None
    if not cert_manager_served(context.client):
        log.info("cert-manager.io/v1 is not served; the mTLS controller is not started")
        return None
    return MTLSController(context)


def _rayservice(context: ControllerContext) -> RayServiceController:
    return RayServiceController(context, metrics_registry=_metrics(context))


def register(registry: ControllerRegistry) -> None:
    """Add every controller of this package to ``registry``.

    The registry builds them in name order, so the RayCluster controller registers the
    shared pod informer (with its projection) before the RayJob controller reads it.
    The RayCronJob, NetworkPolicy and mTLS controllers are built only when their feature
    gates are on (mTLS also needs cert-manager served); the mTLS controller's name sorts
    after the RayCluster controller's, so it shares that one's pod informer."""
    registry.register(RayClusterController.name, _raycluster)
    registry.register(RayJobController.name, _rayjob)
    registry.register(RayServiceController.name, _rayservice)
    registry.register(RayCronJobController.name, _raycronjob)
    registry.register(NetworkPolicyController.name, _networkpolicy)
    registry.register(MTLSController.name, _mtls)
