"""The RayCluster controller's share of mTLS (gate ``RayClusterMTLS``; the certificates
themselves are the mTLS controller's, ``controllers/mtls``):

- ``refuse_without_cert_manager``: a cluster asking for TLS where cert-manager is not
  served gets an ``InvalidRayClusterSpec`` Warning and nothing else, no retry (KubeRay
  looks for ``cert-manager.io/v1`` once, at start);
- ``require_certificates``: no head or worker pod is created until both leaf
  Certificates are Ready for their current generation and both Secrets hold
  ``tls.crt``, ``tls.key`` and ``ca.crt``; until then the pass fails and is retried with
  backoff, so a pod never mounts a Secret from before a SAN change.
"""

from __future__ import annotations

from typing import Final

from operator_runtime.api.labels import NodeType
from operator_runtime.api.reasons import Action, Reason
from operator_runtime.controllers.raycluster.run import ClusterRun, need
from operator_runtime.render import tls
from operator_runtime.runtime import kinds
from operator_runtime.runtime.errors import NotFound, TemporaryError
from operator_runtime.runtime.reconcile import Result

GATE: Final = "RayClusterMTLS"
MTLS_NEEDS: Final = (
    need("cert-manager.io", "certificates", ("get",), "pods wait for Ready certificates", GATE),
    need("", "secrets", ("get",), "pods wait for the issued certificate Secrets", GATE),
)


class CertificatesNotReady(TemporaryError):
    """The leaf certificates or their Secrets are not issued yet: no pod is created."""


def refuse_without_cert_manager(run: ClusterRun) -> Result | None:
    """A gate step, after validation."""
    options = run.tools.options
    if not tls.tls_enabled(run.cluster, options.gates) or options.cert_manager_available:
        return None
    run.event(
        "Warning",
        Reason.INVALID_SPEC,
        f"The RayCluster spec is invalid {run.namespace}/{run.name}: tlsOptions requires "
        "cert-manager, but cert-manager is not installed",
        Action.VALIDATE,
    )
    return Result()


def require_certificates(run: ClusterRun) -> None:
    """Raise ``CertificatesNotReady`` unless pods may be created (TLS off: always)."""
    if not tls.tls_enabled(run.cluster, run.tools.options.gates):
        return
    client, namespace = run.tools.client, run.namespace
    for role in (NodeType.HEAD, NodeType.WORKER):
        name = tls.certificate_name(run.name, role)
        try:
            certificate = client.get(kinds.CERTIFICATE, name, namespace)
        except NotFound:
            raise CertificatesNotReady(
                f"mTLS secrets not ready: certificate {name} not found"
            ) from None
        if not tls.certificate_ready(certificate):
            generation = certificate["metadata"].get("generation")
            raise CertificatesNotReady(
                f"mTLS secrets not ready: certificate {name} is not ready at current "
                f"generation {generation}"
            )
    for role in (NodeType.HEAD, NodeType.WORKER):
        name = tls.secret_name(run.name, role)
        try:
            data = client.get(kinds.SECRET, name, namespace).get("data") or {}
        except NotFound:
            raise CertificatesNotReady(f"mTLS secrets not ready: secret {name} not found") from None
        for key in tls.SECRET_KEYS:
            if key not in data:
                raise CertificatesNotReady(
                    f"mTLS secrets not ready: secret {name} missing required key {key}"
                )
