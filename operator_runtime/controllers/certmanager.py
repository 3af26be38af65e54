"""Whether the API server serves cert-manager, which the ``RayClusterMTLS`` gate needs:
the RayCluster controller refuses TLS clusters without it, and the mTLS controller is
started only with it (KubeRay's ``certManagerAPIAvailable``, asked once at start)."""

from __future__ import annotations

from typing import Final

from operator_runtime.runtime.client import KubeClient

GROUP_VERSION: Final = "cert-manager.io/v1"


def cert_manager_served(client: KubeClient) -> bool:
    """``cert-manager.io/v1`` serves Certificates and Issuers."""
    return client.serves(GROUP_VERSION, "certificates") and client.serves(GROUP_VERSION, "issuers")
