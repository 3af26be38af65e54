"""The mTLS controller: KubeRay v1.7.0's ``raycluster_mtls_controller.go`` (gate
``RayClusterMTLS``), a controller of its own beside the RayCluster one, started only
when cert-manager's ``cert-manager.io/v1`` is served.

One pass over a RayCluster with ``spec.tlsOptions.enabled`` (``reconcile``):

1. gone, being deleted, managed by another controller, or TLS off: nothing (what it
   had goes with it by owner reference);
2. in order, the selfSigned Issuer, the CA Certificate, the CA Issuer (each created
   when missing, never updated), the head's and the workers' Certificates (created, or
   updated when their labels, DNS names or IPs differ: the IPs are the live pods' of
   that role, read from the pod cache). A Secret cert-manager wrote for a Certificate
   gets that Certificate as a (non-controller) owner, so it goes with it;
3. a failed step: a Warning ``MTLSFailedToReconcile`` and a retry with backoff;
4. both leaf Certificates Ready for their current generation: ``MTLSPKIReady`` (and
   ``MTLSCertificateExpiringSoon`` for any within a day of expiry), a look again in a
   minute, which is how a new pod's IP reaches its certificate (pods are not watched,
   as in KubeRay); otherwise ``MTLSCertsNotReady`` and a look again in 30 s.

The RayCluster controller holds pods back until the leaf Secrets are issued
(``controllers/raycluster/mtls.py``).
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

import pydantic

from operator_runtime.api import RayCluster
from operator_runtime.api.features import FeatureGates
from operator_runtime.api.labels import POD_SELECTOR, LabelKey, NodeType
from operator_runtime.api.reasons import Action
from operator_runtime.api.reasons import MTLSReason as R
from operator_runtime.controllers.managedby import managed_elsewhere
from operator_runtime.controllers.permissions import declarer
from operator_runtime.controllers.rendering import gates_of, render_options
from operator_runtime.render import Permission, tls
from operator_runtime.render.tls import TLSParams
from operator_runtime.runtime import kinds
from operator_runtime.runtime.cache import Cache
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.clock import Clock
from operator_runtime.runtime.context import ControllerContext
from operator_runtime.runtime.errors import AlreadyExists, NotFound, TemporaryError
from operator_runtime.runtime.events import EventRecorder
from operator_runtime.runtime.kinds import Object, ResourceKind
from operator_runtime.runtime.reconcile import ObjectKey, Result, Watch, controlled_by, own, owned

log = logging.getLogger(__name__)
NAME: Final = "raycluster-mtls"
"""The controller's name (KubeRay's); it sorts after ``raycluster``, so the registry
builds it second and it shares that controller's pod informer and projection."""
EVENT_SOURCE: Final = "raycluster-mtls-controller"
GATE: Final = "RayClusterMTLS"
NOT_READY_REQUEUE_SECONDS: Final = 30.0
PERIODIC_CHECK_SECONDS: Final = 60.0
EXPIRY_WARNING: Final = datetime.timedelta(hours=24)

# Every cache the controller reads: TLSCaches field -> (kind, label selector).
WATCHED: Final[dict[str, tuple[ResourceKind, str | None]]] = {
    "clusters": (kinds.RAY_CLUSTER, None),
    "issuers": (kinds.ISSUER, None),
    "certificates": (kinds.CERTIFICATE, None),
    "pods": (kinds.POD, POD_SELECTOR),
}

need: Final = declarer(NAME, only_with=GATE)

PERMISSIONS: Final[tuple[Permission, ...]] = (
    *(
        need(kind.group, kind.plural, ("list", "watch"), "informer cache")
        for kind, _ in WATCHED.values()
    ),
    need("cert-manager.io", "issuers", ("create",), "the selfSigned and CA Issuers"),
    need(
        "cert-manager.io",
        "certificates",
        ("create", "update"),
        "the CA and the head's and workers' Certificates; their SANs follow the pods' IPs",
    ),
    need(
        "",
        "secrets",
        ("get", "update"),
        "a Certificate's Secret gets the Certificate as an owner",
    ),
)
"""Everything the controller uses: the permission table (render/operator_permissions.py)
is generated from it."""


def enabled(gates: FeatureGates) -> bool:
    """The ``RayClusterMTLS`` gate; KubeRay also needs cert-manager served
    (``controllers.certmanager``: without it the caches would never fill)."""
    return gates.enabled(GATE)


@dataclass(frozen=True, slots=True)
class TLSCaches:
    clusters: Cache
    issuers: Cache
    certificates: Cache
    pods: Cache


class MTLSController:
    """``Controller`` of the cert-manager objects of ``ray.io/v1`` RayClusters."""

    name = NAME

    def __init__(self, context: ControllerContext) -> None:
        self.caches = TLSCaches(**context.caches(WATCHED))
        self.client: KubeClient = context.client
        self.clock: Clock = context.clock
        self.events: EventRecorder = context.events(EVENT_SOURCE)
        self.gates = gates_of(context)
        options = render_options(context.settings, self.gates, context.configuration)
        self.cluster_domain = options.cluster_domain

    def watches(self) -> Sequence[Watch]:
        return [
            own(kinds.RAY_CLUSTER),
            owned(kinds.ISSUER, kinds.RAY_CLUSTER),
            owned(kinds.CERTIFICATE, kinds.RAY_CLUSTER),
        ]

    def reconcile(self, key: ObjectKey) -> Result:
        raw = self.caches.clusters.get(key.namespace, key.name)
        if raw is None or kinds.being_deleted(raw) or managed_elsewhere(key, raw):
            return Result()
        try:
            cluster = RayCluster.model_validate(raw)
        except pydantic.ValidationError:
            log.info("%s: the RayCluster cannot be read; no certificates", key)
            return Result()
        if not tls.tls_enabled(cluster, self.gates):
            return Result()
        params = TLSParams(
            cluster=cluster,
            cluster_domain=self.cluster_domain,
            head_ips=self._pod_ips(key, NodeType.HEAD),
            worker_ips=self._pod_ips(key, NodeType.WORKER),
        )
        steps: tuple[tuple[str, Callable[[Object, TLSParams], None]], ...] = (
            ("self-signed issuer", self._selfsigned_issuer),
            ("CA certificate", self._ca_certificate),
            ("CA issuer", self._ca_issuer),
            ("head certificate", self._head_certificate),
            ("worker certificate", self._worker_certificate),
        )
        for what, step in steps:
            try:
                step(raw, params)
            except Exception as exc:
                self.events.record(
                    raw, "Warning", R.FAILED_TO_RECONCILE.value,
                    f"Failed to reconcile mTLS {what}: {exc}", Action.RECONCILE.value,
                )  # fmt: skip
                raise
        name = key.name
        leaves = [tls.certificate_name(name, role) for role in (NodeType.HEAD, NodeType.WORKER)]
        for leaf in leaves:
            found = self.caches.certificates.get(key.namespace, leaf)
            if found is None:  # created this pass, not in the cache yet: back off
                raise TemporaryError(f"Certificate {key.namespace}/{leaf} not in the cache yet")
            if not tls.certificate_ready(found):
                log.info("%s: certificate %s not ready yet", key, leaf)
                self.events.record(
                    raw, "Normal", R.CERTS_NOT_READY.value,
                    "Waiting for cert-manager to issue mTLS certificates", Action.RECONCILE.value,
                )  # fmt: skip
                return Result(requeue_after=NOT_READY_REQUEUE_SECONDS)
        self.events.record(
            raw, "Normal", R.PKI_READY.value,
            "mTLS PKI is ready: CA, head, and worker certificates issued", Action.RECONCILE.value,
        )  # fmt: skip
        self._warn_expiring(raw, [*leaves, tls.ca_certificate_name(name)])
        return Result(requeue_after=PERIODIC_CHECK_SECONDS)

    # -- the steps ---------------------------------------------------------------------

    def _create_if_missing(self, cache: Cache, desired: Object) -> None:
        metadata = desired["metadata"]
        if cache.get(metadata["namespace"], metadata["name"]) is not None:
            return
        try:
            self.client.create(desired)
        except AlreadyExists:
            return  # created since the cache was filled; never updated, as in KubeRay

    def _selfsigned_issuer(self, _: Object, params: TLSParams) -> None:
        self._create_if_missing(self.caches.issuers, tls.build_selfsigned_issuer(params=params))

    def _ca_issuer(self, _: Object, params: TLSParams) -> None:
        self._create_if_missing(self.caches.issuers, tls.build_ca_issuer(params=params))

    def _ca_certificate(self, _: Object, params: TLSParams) -> None:
        desired: Object = tls.build_ca_certificate(params=params)
        metadata = desired["metadata"]
        existing = self.caches.certificates.get(metadata["namespace"], metadata["name"])
        if existing is None:
            self._create_if_missing(self.caches.certificates, desired)
            return
        self._own_secret(existing)

    def _head_certificate(self, cluster: Object, params: TLSParams) -> None:
        self._leaf(cluster, params, NodeType.HEAD)

    def _worker_certificate(self, cluster: Object, params: TLSParams) -> None:
        self._leaf(cluster, params, NodeType.WORKER)

    def _leaf(self, cluster: Object, params: TLSParams, role: NodeType) -> None:
        desired: Object = tls.build_leaf_certificate(params=params, node_type=role)
        metadata = desired["metadata"]
        existing = self.caches.certificates.get(metadata["namespace"], metadata["name"])
        if existing is None:
            self._create_if_missing(self.caches.certificates, desired)
            return
        if tls.certificate_needs_update(existing, desired):
            updated = _with_desired(existing, desired, str(cluster["metadata"].get("uid") or ""))
            ips = [str(ip) for ip in desired["spec"]["ipAddresses"]]
            log.info(
                "%s: updating %s certificate (IPs %s)", params.cluster.metadata.name, role, ips
            )
            self.events.record(
                cluster, "Normal", R.CERTIFICATES_UPDATED.value,
                f"Updated {role} certificate SANs (IPs: [{' '.join(ips)}])", Action.UPDATE.value,
            )  # fmt: skip
            existing = self.client.update(updated)
        self._own_secret(existing)

    def _own_secret(self, certificate: Object) -> None:
        """The Certificate's Secret gets it as an owner (not a controller), so deleting
        the Certificate (with its cluster) takes the Secret too. None yet: a later pass."""
        metadata = certificate["metadata"]
        secret_name = str((certificate.get("spec") or {}).get("secretName") or "")
        try:
            secret = self.client.get(kinds.SECRET, secret_name, metadata["namespace"])
        except NotFound:
            return
        refs = list(secret["metadata"].get("ownerReferences") or ())
        if any(ref.get("uid") == metadata.get("uid") for ref in refs):
            return
        refs.append(
            {
                "apiVersion": kinds.CERTIFICATE.api_version,
                "kind": kinds.CERTIFICATE.kind,
                "name": metadata["name"],
                "uid": metadata["uid"],
            }
        )
        self.client.update({**secret, "metadata": {**secret["metadata"], "ownerReferences": refs}})

    # -- reads -------------------------------------------------------------------------

    def _pod_ips(self, key: ObjectKey, role: NodeType) -> tuple[str, ...]:
        """The IPs of the cluster's live pods of ``role`` (not deleting, not finished)."""
        ips = []
        for pod in self.caches.pods.list(key.namespace):
            labels = pod["metadata"].get("labels") or {}
            if labels.get(LabelKey.CLUSTER) != key.name or labels.get(LabelKey.NODE_TYPE) != role:
                continue
            status = pod.get("status") or {}
            if kinds.being_deleted(pod) or status.get("phase") in ("Succeeded", "Failed"):
                continue
            if status.get("podIP"):
                ips.append(str(status["podIP"]))
        return tuple(ips)

    def _warn_expiring(self, cluster: Object, names: list[str]) -> None:
        namespace = str(cluster["metadata"].get("namespace") or "")
        now = self.clock.now()
        for name in names:
            found = self.caches.certificates.get(namespace, name)
            not_after = ((found or {}).get("status") or {}).get("notAfter")
            if not not_after:
                continue
            expiry = datetime.datetime.fromisoformat(str(not_after).replace("Z", "+00:00"))
            remaining = expiry - now
            if remaining < EXPIRY_WARNING:
                self.events.record(
                    cluster, "Warning", R.CERTIFICATE_EXPIRING_SOON.value,
                    f"TLS certificate {name} expires in {remaining.total_seconds() / 3600:.1f} "
                    "hours; Ray does not hot-reload certs so a pod restart will be needed after "
                    "renewal",
                    Action.RECONCILE.value,
                )  # fmt: skip


class AlreadyOwned(TemporaryError):
    """A Certificate of the name the cluster needs is controlled by another object."""


def _with_desired(existing: Object, desired: Object, uid: str) -> Object:
    """``existing`` with the desired labels and spec, and the cluster as its controller
    (``SetControllerReference``: refused if another object controls it)."""
    refs = list(existing["metadata"].get("ownerReferences") or ())
    if not controlled_by(existing, uid):
        if any(ref.get("controller") for ref in refs):
            raise AlreadyOwned(
                f"Certificate {existing['metadata'].get('namespace')}/"
                f"{existing['metadata'].get('name')} is controlled by another object"
            )
        refs.append(desired["metadata"]["ownerReferences"][0])
    metadata = {
        **existing["metadata"],
        "labels": dict(desired["metadata"]["labels"]),
        "ownerReferences": refs,
    }
    return {**existing, "metadata": metadata, "spec": desired["spec"]}
