"""The mTLS controller (``controller.py``): the cert-manager Issuers and Certificates of a
RayCluster with ``spec.tlsOptions.enabled``, only with the ``RayClusterMTLS`` feature gate
on and cert-manager served."""

from operator_runtime.controllers.mtls.controller import (
    PERMISSIONS,
    WATCHED,
    MTLSController,
    TLSCaches,
    enabled,
)

__all__ = [
    "PERMISSIONS",
    "WATCHED",
    "MTLSController",
    "TLSCaches",
    "enabled",
]
