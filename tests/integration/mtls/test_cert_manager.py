"""cert-manager built here issues on the local control plane what KubeRay's mTLS asks it
for: a selfSigned Issuer signs a CA Certificate, a CA Issuer backed by that CA's Secret
signs a leaf Certificate, and each Certificate is marked Ready with its Secret holding
``tls.crt``, ``tls.key`` and ``ca.crt``; the leaf carries the asked SANs and chains to
the CA."""

from __future__ import annotations

import base64
from typing import Any

from cryptography import x509

from hack.certmanager import run as certmanager_run
from hack.localcluster import LocalCluster
from operator_runtime.runtime.kinds import SECRET
from tests.kubeclient import make_client
from tests.waiting import wait_for

CERT_MANAGER = "cert-manager.io/v1"
CERTIFICATE_NAME = "cert-manager.io/certificate-name"
CERTIFICATE_REVISION = "cert-manager.io/certificate-revision"
READY_WITHIN = 60.0
"""cert-manager issues a certificate in well under a second on an idle machine; the bound
is for a loaded one (key generation is RSA 4096 for the CA, as KubeRay asks)."""


def _issuer(name: str, namespace: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": CERT_MANAGER,
        "kind": "Issuer",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def _certificate(name: str, namespace: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": CERT_MANAGER,
        "kind": "Certificate",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def _ready(cluster: LocalCluster, kind: str, name: str, namespace: str) -> bool:
    found = cluster.get_json("-n", namespace, f"{kind}.cert-manager.io", name)
    conditions = (found.get("status") or {}).get("conditions") or ()
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def _issued_for(cluster: LocalCluster, namespace: str, certificate: str) -> list[bytes]:
    """The PEM certificates cert-manager issued for ``certificate``, oldest first: one per
    CertificateRequest it made for it (each carries the Certificate's revision)."""
    requests = cluster.get_json("-n", namespace, "certificaterequests.cert-manager.io")
    mine = [r for r in requests["items"]
            if r["metadata"].get("annotations", {}).get(CERTIFICATE_NAME) == certificate
            and (r.get("status") or {}).get("certificate")]  # fmt: skip
    mine.sort(key=lambda r: int(r["metadata"]["annotations"][CERTIFICATE_REVISION]))
    return [base64.b64decode(r["status"]["certificate"]) for r in mine]


def test_ca_and_leaf_certificates_become_ready(
    local_cluster: LocalCluster, cert_manager: certmanager_run.CertManager, namespace: str
) -> None:
    documents = [
        _issuer("selfsigned", namespace, {"selfSigned": {}}),
        _certificate(
            "ca",
            namespace,
            {
                "isCA": True,
                "commonName": "test-ca",
                "secretName": "ca-secret",
                "duration": "87600h",
                "privateKey": {"algorithm": "RSA", "size": 4096},
                "issuerRef": {"name": "selfsigned", "kind": "Issuer", "group": "cert-manager.io"},
                # Every issue's CertificateRequest kept (cert-manager keeps 1 by default)
                # for _issued_for.
                "revisionHistoryLimit": 10,
            },
        ),
        _issuer("ca-issuer", namespace, {"ca": {"secretName": "ca-secret"}}),
        _certificate(
            "leaf",
            namespace,
            {
                "secretName": "leaf-secret",
                "duration": "2160h",
                "dnsNames": ["localhost", "head.example.svc.cluster.local"],
                "ipAddresses": ["127.0.0.1", "10.244.0.7"],
                "usages": ["digital signature", "key encipherment", "server auth", "client auth"],
                "issuerRef": {"name": "ca-issuer", "kind": "Issuer", "group": "cert-manager.io"},
            },
        ),
    ]
    client = make_client(local_cluster)
    for document in documents:
        client.create(document)

    for kind, name in (("issuers", "selfsigned"), ("certificates", "ca"),
                       ("issuers", "ca-issuer"), ("certificates", "leaf")):  # fmt: skip
        wait_for(
            f"{kind}/{name} Ready",
            lambda kind=kind, name=name: _ready(local_cluster, kind, name, namespace),
            READY_WITHIN, 0.2,
            explain=lambda kind=kind, name=name: local_cluster.get_json(
                "-n", namespace, f"{kind}.cert-manager.io", name
            ).get("status"),
        )  # fmt: skip

    ca_data = client.get(SECRET, "ca-secret", namespace)["data"]
    leaf_data = client.get(SECRET, "leaf-secret", namespace)["data"]
    assert {"tls.crt", "tls.key", "ca.crt"} <= set(leaf_data)
    issued = _issued_for(local_cluster, namespace, "ca")
    if len(issued) > 1:
        print(f"cert-manager issued the CA {len(issued)} times")
    # The Secret holds the CA's latest issue; the leaf was signed by the issue the CA
    # Issuer read at the time, which is that one unless cert-manager issued the CA again
    # after it (its controllers act on informer caches: under load it has issued a new
    # CA a second after the first, and a leaf signed in that second keeps the first).
    assert base64.b64decode(ca_data["tls.crt"]) == issued[-1]
    signer = base64.b64decode(leaf_data["ca.crt"])
    assert signer in issued, "the leaf's ca.crt is no certificate issued for the CA"
    ca = x509.load_pem_x509_certificate(signer)
    leaf = x509.load_pem_x509_certificate(base64.b64decode(leaf_data["tls.crt"]))
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert ca.public_key().key_size == 4096  # type: ignore[union-attr]
    leaf.verify_directly_issued_by(ca)
    names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sorted(names.get_values_for_type(x509.DNSName)) == [
        "head.example.svc.cluster.local", "localhost",
    ]  # fmt: skip
    assert sorted(str(ip) for ip in names.get_values_for_type(x509.IPAddress)) == [
        "10.244.0.7", "127.0.0.1",
    ]  # fmt: skip
