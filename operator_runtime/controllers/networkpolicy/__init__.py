"""The NetworkPolicy controller (``controller.py``): the head's and each worker group's
NetworkPolicy of a RayCluster with ``spec.networkPolicy``, only with the
``RayClusterNetworkPolicy`` feature gate on."""

from operator_runtime.controllers.networkpolicy.controller import (
    PERMISSIONS,
    WATCHED,
    NetworkPolicyController,
    PolicyCaches,
    enabled,
)

__all__ = ["PERMISSIONS", "WATCHED", "NetworkPolicyController", "PolicyCaches", "enabled"]
