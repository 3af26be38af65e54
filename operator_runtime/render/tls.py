"""Mutual TLS between a RayCluster's pods (KubeRay v1.7.0's ``RayClusterMTLS`` gate).

Two halves, both pure:

- the cert-manager objects the mTLS controller keeps (``build_*``): a selfSigned Issuer,
  a CA Certificate it signs, a CA Issuer backed by that CA's Secret, and one leaf
  Certificate for the head and one shared by all workers, with KubeRay's names,
  durations, usages and SANs (pod IPs are an input: the controller reads them);
- what a pod gets (``configure_pod``): the leaf's Secret as the ``ray-tls`` volume, the
  TLS env vars and mount on the Ray container and the workers' ``wait-gcs-ready``, and a
  first init container, ``wait-for-tls-ip-san``, that holds the pod until cert-manager
  has put its IP into the certificate (the autoscaler gets its env and mount where it is
  built, ``containers.autoscaler_container``).

Dashboard, probes and submitters stay plain HTTP, as in KubeRay.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from operator_runtime.api import JSONObject, RayCluster
from operator_runtime.api.features import FeatureGates
from operator_runtime.api.labels import LabelKey, NodeType
from operator_runtime.render._json import child_list, deep_copy, objects
from operator_runtime.render.containers import (
    TLS_MOUNT_PATH,
    TLS_VOLUME,
    WAIT_GCS_READY,
    add_tls_config,
    in_go_order,
    resources,
)
from operator_runtime.render.metadata import owner_reference
from operator_runtime.render.names import cluster_name, head_fqdn, namespace_of

CERT_MANAGER_API: Final = "cert-manager.io/v1"
WAIT_FOR_TLS_IP_SAN: Final = "wait-for-tls-ip-san"
CA_DURATION: Final = "87600h0m0s"
"""Ten years, as Go prints KubeRay's ``24h * 3650``."""
CA_RENEW_BEFORE: Final = "720h0m0s"
LEAF_DURATION: Final = "2160h0m0s"
LEAF_RENEW_BEFORE: Final = "360h0m0s"
LEAF_USAGES: Final = ("digital signature", "key encipherment", "server auth", "client auth")
CA_USAGES: Final = ("cert sign", "crl sign")
SECRET_KEYS: Final = ("tls.crt", "tls.key", "ca.crt")
"""What a leaf Secret must hold before any pod mounts it."""
LOOPBACK: Final = "127.0.0.1"

_SAN_TEST: Final = (
    'openssl x509 -in "${CERT}" -noout -text 2>/dev/null'
    ' | grep -qE "IP Address:${POD_IP}([^0-9.]|$)"'
)
_WAIT_SCRIPT: Final = """CERT="{cert}"
if [ -z "${{POD_IP}}" ]; then
  POD_IP=$(hostname -i 2>/dev/null | awk '{{print $1}}')
fi
if ! command -v openssl >/dev/null 2>&1; then
  echo "openssl not found; cannot verify IP SAN" >&2
  exit 1
fi
echo "Waiting for TLS cert to include IP SAN for ${{POD_IP}}..."
while true; do
  if {san_test}; then
    echo "TLS cert now includes IP SAN for ${{POD_IP}}"
    exit 0
  fi
  echo "IP SAN for ${{POD_IP}} not yet in cert, retrying in 5s..."
  sleep 5
done"""
"""The init container's loop, KubeRay's text (its output is compared side by side)."""


def tls_enabled(cluster: RayCluster, gates: FeatureGates) -> bool:
    """``IsTLSEnabled``: the gate on and ``spec.tlsOptions.enabled`` true."""
    options = cluster.spec.tls_options
    return gates.ray_cluster_mtls and options is not None and bool(options.enabled)


# -- names -----------------------------------------------------------------------------


def selfsigned_issuer_name(cluster: str) -> str:
    return f"ray-selfsigned-issuer-{cluster}"


def ca_certificate_name(cluster: str) -> str:
    return f"ray-ca-certificate-{cluster}"


def ca_issuer_name(cluster: str) -> str:
    return f"ray-ca-issuer-{cluster}"


def ca_secret_name(cluster: str, uid: str) -> str:
    """``{cluster}-ca-secret-{uid[:8]}``: a cluster recreated under its old name gets a
    new CA rather than the previous one's Secret."""
    return f"{cluster}-ca-secret-{uid[:8]}"


def certificate_name(cluster: str, node_type: NodeType) -> str:
    role = "head" if node_type is NodeType.HEAD else "worker"
    return f"ray-{role}-cert-{cluster}"


def secret_name(cluster: str, node_type: NodeType) -> str:
    role = "head" if node_type is NodeType.HEAD else "worker"
    return f"ray-{role}-secret-{cluster}"


# -- the cert-manager objects ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TLSParams:
    """One RayCluster's PKI; ``head_ips``/``worker_ips``: its live pods' IPs by role."""

    cluster: RayCluster
    cluster_domain: str = "cluster.local"
    head_ips: tuple[str, ...] = ()
    worker_ips: tuple[str, ...] = ()


def _labels(cluster: RayCluster, component: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/component": component,
        LabelKey.APP_NAME.value: "kuberay",
        LabelKey.CREATED_BY.value: "kuberay-operator",
        LabelKey.CLUSTER.value: cluster_name(cluster),
    }


def _object(
    cluster: RayCluster, kind: str, name: str, component: str, spec: JSONObject
) -> JSONObject:
    return {
        "apiVersion": CERT_MANAGER_API,
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": namespace_of(cluster),
            "labels": dict(sorted(_labels(cluster, component).items())),
            "ownerReferences": [owner_reference(cluster)],
        },
        "spec": spec,
    }


def _issuer_ref(name: str) -> JSONObject:
    return {"name": name, "kind": "Issuer", "group": "cert-manager.io"}


def build_selfsigned_issuer(*, params: TLSParams) -> JSONObject:
    name = cluster_name(params.cluster)
    return _object(
        params.cluster, "Issuer", selfsigned_issuer_name(name), "selfsigned-issuer",
        {"selfSigned": {}},
    )  # fmt: skip


def build_ca_certificate(*, params: TLSParams) -> JSONObject:
    cluster = params.cluster
    name = cluster_name(cluster)
    spec: JSONObject = {
        "secretName": ca_secret_name(name, cluster.metadata.uid or ""),
        "isCA": True,
        "commonName": f"ray-ca-{name}",
        "privateKey": {"algorithm": "RSA", "size": 4096},
        "duration": CA_DURATION,
        "renewBefore": CA_RENEW_BEFORE,
        "usages": list(CA_USAGES),
        "issuerRef": _issuer_ref(selfsigned_issuer_name(name)),
    }
    return _object(cluster, "Certificate", ca_certificate_name(name), "ca-certificate", spec)


def build_ca_issuer(*, params: TLSParams) -> JSONObject:
    cluster = params.cluster
    name = cluster_name(cluster)
    spec: JSONObject = {"ca": {"secretName": ca_secret_name(name, cluster.metadata.uid or "")}}
    return _object(cluster, "Issuer", ca_issuer_name(name), "ca-issuer", spec)


def leaf_ip_addresses(pod_ips: Iterable[str]) -> list[str]:
    """The pods' IPs and 127.0.0.1, sorted as strings, without repeats or blanks."""
    return sorted({ip for ip in pod_ips if ip} | {LOOPBACK})


def build_leaf_certificate(*, params: TLSParams, node_type: NodeType) -> JSONObject:
    """The head's Certificate (localhost and the head Service's FQDN, the head pods' IPs)
    or the workers' (localhost, every worker pod's IP)."""
    cluster = params.cluster
    name = cluster_name(cluster)
    head = node_type is NodeType.HEAD
    dns = sorted(
        {"localhost", head_fqdn(cluster, params.cluster_domain)} if head else {"localhost"}
    )
    spec: JSONObject = {
        "secretName": secret_name(name, node_type),
        "duration": LEAF_DURATION,
        "renewBefore": LEAF_RENEW_BEFORE,
        "dnsNames": list(dns),
        "ipAddresses": list(leaf_ip_addresses(params.head_ips if head else params.worker_ips)),
        "usages": list(LEAF_USAGES),
        "issuerRef": _issuer_ref(ca_issuer_name(name)),
    }
    component = "head-certificate" if head else "worker-certificate"
    return _object(cluster, "Certificate", certificate_name(name, node_type), component, spec)


def certificate_needs_update(existing: JSONObject, desired: JSONObject) -> bool:
    """KubeRay's test: the labels differ, or the DNS names or IPs differ as sets."""
    labels = (existing.get("metadata") or {}).get("labels") or {}  # type: ignore[union-attr]
    if labels != (desired.get("metadata") or {}).get("labels"):  # type: ignore[union-attr]
        return True
    have, want = existing.get("spec") or {}, desired.get("spec") or {}
    assert isinstance(have, dict) and isinstance(want, dict)
    return any(
        _as_set(have.get(field)) != _as_set(want.get(field))
        or len(have.get(field) or ()) != len(want.get(field) or ())  # type: ignore[arg-type]
        for field in ("dnsNames", "ipAddresses")
    )


def _as_set(values: object) -> set[str]:
    return {str(v) for v in values} if isinstance(values, list) else set()


def certificate_ready(certificate: JSONObject) -> bool:
    """Ready True for the Certificate's current generation: a Ready left from before a
    SAN change does not count."""
    metadata = certificate.get("metadata") or {}
    status = certificate.get("status") or {}
    assert isinstance(metadata, dict) and isinstance(status, dict)
    for condition in objects(status.get("conditions")):
        if condition.get("type") == "Ready":
            return condition.get("status") == "True" and condition.get(
                "observedGeneration"
            ) == metadata.get("generation")
    return False


# -- the pods --------------------------------------------------------------------------


def configure_pod(*, spec: JSONObject, cluster: RayCluster, node_type: NodeType) -> None:
    """``configureTLS``: the ``ray-tls`` volume (the role's leaf Secret), TLS env and
    mount on the Ray container and ``wait-gcs-ready``, and ``wait-for-tls-ip-san``
    first among the init containers. Every step skips what is already there."""
    volumes = child_list(spec, "volumes")
    if not any(v.get("name") == TLS_VOLUME for v in objects(volumes)):
        volumes.append(
            {
                "name": TLS_VOLUME,
                "secret": {"secretName": secret_name(cluster_name(cluster), node_type)},
            }
        )
    pod_containers = objects(spec.get("containers"))
    add_tls_config(pod_containers[0])
    for init in objects(spec.get("initContainers")):
        if init.get("name") == WAIT_GCS_READY:
            add_tls_config(init)
    inits = child_list(spec, "initContainers")
    if any(c.get("name") == WAIT_FOR_TLS_IP_SAN for c in objects(inits)):
        return
    inits.insert(0, wait_for_tls_ip_san_container(pod_containers[0]))


def wait_for_tls_ip_san_container(ray: JSONObject) -> JSONObject:
    """Holds the pod until its IP is an IP SAN of the mounted certificate: before that,
    the GCS (on the head) would refuse the handshake of a worker's raylet dialled at its
    IP, and the autoscaler's of the head itself."""
    container: JSONObject = {
        "name": WAIT_FOR_TLS_IP_SAN,
        "image": ray.get("image", ""),
        "command": ["sh", "-c"],
        "args": [_WAIT_SCRIPT.format(san_test=_SAN_TEST, cert=f"{TLS_MOUNT_PATH}/tls.crt")],
        "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
        "resources": resources("50m", "64Mi"),
        "volumeMounts": [{"name": TLS_VOLUME, "readOnly": True, "mountPath": TLS_MOUNT_PATH}],
    }
    if ray.get("imagePullPolicy"):
        container["imagePullPolicy"] = ray["imagePullPolicy"]
    if isinstance(ray.get("securityContext"), dict):
        container["securityContext"] = deep_copy(ray["securityContext"])  # type: ignore[arg-type]
    return in_go_order(container)
