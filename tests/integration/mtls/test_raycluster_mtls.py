"""RayClusterMTLS on the real API server with the cert-manager built here
(``hack/certmanager``): the mTLS controller (gate on, beside the RayCluster controller)
creates KubeRay v1.7.0's Issuers and Certificates; no pod is created while cert-manager
has not issued them; once it has, the head and worker pods are created with the TLS
wiring, the Secrets get their Certificate as owner, and each leaf Certificate's IP SANs
follow the pods' IPs (kwok gives the pods addresses) and are reissued by cert-manager.

Without cert-manager the RayCluster controller refuses a TLS cluster with an
InvalidRayClusterSpec event and creates nothing."""

from __future__ import annotations

import base64
import dataclasses
import ipaddress
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509

from hack.certmanager import run as certmanager_run
from hack.localcluster import LocalCluster
from operator_runtime import controllers
from operator_runtime.api import FeatureGates
from operator_runtime.controllers.certmanager import cert_manager_served
from operator_runtime.controllers.mtls.controller import PERIODIC_CHECK_SECONDS
from operator_runtime.controllers.raycluster import RayClusterController, RayClusterOptions
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.errors import NotFound
from operator_runtime.runtime.kinds import (
    CERTIFICATE,
    ISSUER,
    POD,
    RAY_CLUSTER,
    SECRET,
    SERVICE,
    Object,
)
from operator_runtime.runtime.manager import Manager, ManagerOptions
from operator_runtime.runtime.registry import ControllerRegistry
from tests.integration.managers import manager_running
from tests.integration.raycluster.conftest import (  # noqa: F401 (fixtures)
    gc_probe,
    ray_crds,
    raycluster,
    recorded,
)
from tests.kubeclient import make_client
from tests.waiting import wait_for

GATE = "RayClusterMTLS"
ISSUE_WITHIN = 180.0
"""cert-manager issues a certificate in about a second on an idle machine (an RSA-4096
CA key the slowest part, its prime search of widely varying length); the bound is for a
loaded one (60 s was once too few, with the CPUs 98% busy and tasks waiting for them
half the run)."""
SAN_UPDATE_WITHIN = PERIODIC_CHECK_SECONDS + ISSUE_WITHIN
"""Pods are not watched (as in KubeRay): a new pod's IP reaches its certificate at the
controller's next periodic look, then cert-manager reissues it."""


@contextmanager
def mtls_operator(cluster: LocalCluster, namespace: str) -> Iterator[list[str]]:
    """The RayCluster and mTLS controllers as the operator registers them, gate on."""
    manager = Manager(
        make_client(cluster),
        ManagerOptions(
            namespaces=(namespace,), concurrency=2, metrics_address="0", health_address="0",
            feature_gates=((GATE, True),),
        ),
    )  # fmt: skip
    registry = ControllerRegistry()
    controllers.register(registry)
    built = registry.build(manager.context(), ["raycluster", "raycluster-mtls"])
    for controller in built:
        manager.add(controller)
    with manager_running(manager):
        yield [c.name for c in built]


def find(client: KubeClient, kind: Any, namespace: str, name: str) -> Object | None:
    try:
        return client.get(kind, name, namespace)
    except NotFound:
        return None


def conditions(client: KubeClient, namespace: str) -> dict[str, Any]:
    """Each certificate's conditions in ``namespace``: where a wait for one stopped."""
    return {
        item["metadata"]["name"]: (item.get("status") or {}).get("conditions")
        for item in client.list(CERTIFICATE, namespace)["items"]
    }


def ready(certificate: Object | None) -> bool:
    if certificate is None:
        return False
    generation = certificate["metadata"].get("generation")
    return any(
        c["type"] == "Ready" and c["status"] == "True" and c.get("observedGeneration") == generation
        for c in (certificate.get("status") or {}).get("conditions") or ()
    )


def pods(client: KubeClient, namespace: str, node_type: str) -> list[Object]:
    found = client.list(POD, namespace, label_selector=f"ray.io/node-type={node_type}")["items"]
    return list(found)


def secret_ips(client: KubeClient, namespace: str, name: str) -> set[str]:
    data = client.get(SECRET, name, namespace)["data"]
    certificate = x509.load_pem_x509_certificate(base64.b64decode(data["tls.crt"]))
    sans = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return {str(ip) for ip in sans.get_values_for_type(x509.IPAddress)}


def tls_cluster(namespace: str) -> dict[str, Any]:
    return raycluster("secure", namespace, workers=1, tlsOptions={"enabled": True})


@pytest.fixture
def client(ray_crds: LocalCluster) -> KubeClient:  # noqa: F811
    return make_client(ray_crds)


def test_pods_wait_for_issued_certificates_and_sans_follow_pod_ips(
    ray_crds: LocalCluster,  # noqa: F811
    client: KubeClient,
    namespace: str,
    tmp_path: Path,
) -> None:
    certmanager_run.install(ray_crds)  # the API, but no controller issuing yet
    assert cert_manager_served(client)
    with mtls_operator(ray_crds, namespace) as names:
        assert names == ["raycluster", "raycluster-mtls"]
        uid = client.create(tls_cluster(namespace))["metadata"]["uid"]

        # The whole PKI exists, owned by the cluster, but nothing issues it: no pods.
        wanted = {
            ISSUER: ["ray-selfsigned-issuer-secure", "ray-ca-issuer-secure"],
            CERTIFICATE: [
                "ray-ca-certificate-secure", "ray-head-cert-secure", "ray-worker-cert-secure",
            ],
        }  # fmt: skip
        for kind, object_names in wanted.items():
            for name in object_names:
                made = wait_for(
                    f"{kind.kind} {name}", lambda k=kind, n=name: find(client, k, namespace, n)
                )
                [owner] = made["metadata"]["ownerReferences"]
                assert (owner["kind"], owner["uid"], owner["controller"]) == (
                    "RayCluster",
                    uid,
                    True,
                )
        ca = client.get(CERTIFICATE, "ray-ca-certificate-secure", namespace)
        assert ca["spec"]["secretName"] == f"secure-ca-secret-{uid[:8]}"
        recorded(client, namespace, "MTLSCertsNotReady", "secure")
        # A finished RayCluster pass (its status written) went through the pod step.
        wait_for(
            "a RayCluster status",
            lambda: (client.get(RAY_CLUSTER, "secure", namespace).get("status") or {}).get(
                "observedGeneration"
            ),
        )
        assert pods(client, namespace, "head") == [] and pods(client, namespace, "worker") == []

        with certmanager_run.running(ray_crds, tmp_path / "cert-manager"):
            for name in ("ray-head-cert-secure", "ray-worker-cert-secure"):
                wait_for(
                    f"{name} Ready",
                    lambda n=name: ready(find(client, CERTIFICATE, namespace, n)),
                    ISSUE_WITHIN, 0.5,
                    explain=lambda: conditions(client, namespace),
                )  # fmt: skip
            recorded(client, namespace, "MTLSPKIReady", "secure", timeout=ISSUE_WITHIN)
            head = wait_for(
                "the head pod", lambda: pods(client, namespace, "head"), ISSUE_WITHIN, 0.5
            )[0]
            spec = head["spec"]
            assert spec["initContainers"][0]["name"] == "wait-for-tls-ip-san"
            tls_volumes = [
                v["secret"]["secretName"] for v in spec["volumes"] if v["name"] == "ray-tls"
            ]
            assert tls_volumes == ["ray-head-secret-secure"]
            env = {e["name"]: e.get("value") for e in spec["containers"][0]["env"]}
            assert env["RAY_USE_TLS"] == "1"
            wait_for("a worker pod", lambda: pods(client, namespace, "worker"), ISSUE_WITHIN, 0.5)

            # Each role's certificate comes to list its pods' IPs, reissued.
            for role, secret in (("head", "ray-head-secret-secure"),
                                 ("worker", "ray-worker-secret-secure")):  # fmt: skip
                ips = wait_for(
                    f"{role} pod IPs",
                    lambda r=role: {str(p["status"].get("podIP") or "") for p in
                                    pods(client, namespace, r)} - {""},
                    ISSUE_WITHIN, 0.5,
                )  # fmt: skip
                assert all(ipaddress.ip_address(ip) for ip in ips)
                certificate_name = f"ray-{role}-cert-secure"

                def reissued(want: set[str] = ips, cert: str = certificate_name,
                             held: str = secret) -> bool:  # fmt: skip
                    found = find(client, CERTIFICATE, namespace, cert)
                    listed = set((found or {}).get("spec", {}).get("ipAddresses") or ())
                    return (
                        ready(found)
                        and want | {"127.0.0.1"} == listed
                        and want <= secret_ips(client, namespace, held)
                    )

                wait_for(f"the {role} certificate to list {sorted(ips)}", reissued,
                         SAN_UPDATE_WITHIN, 1.0)  # fmt: skip
                recorded(client, namespace, "MTLSCertificatesUpdated", "secure")
                secret_owners = client.get(SECRET, secret, namespace)["metadata"]["ownerReferences"]
                certificate = client.get(CERTIFICATE, certificate_name, namespace)
                assert [(o["kind"], o["uid"]) for o in secret_owners] == [
                    ("Certificate", certificate["metadata"]["uid"])
                ]


def test_without_cert_manager_a_tls_cluster_is_refused(
    ray_crds: LocalCluster,  # noqa: F811
    client: KubeClient,
    namespace: str,
) -> None:
    """What KubeRay does where cert-manager.io/v1 is not served (found at start): the
    RayCluster controller is told so here, as this control plane may have cert-manager's
    CRDs from the other test."""
    manager = Manager(
        make_client(ray_crds),
        ManagerOptions(
            namespaces=(namespace,), concurrency=2, metrics_address="0", health_address="0",
            feature_gates=((GATE, True),),
        ),
    )  # fmt: skip
    options = RayClusterOptions.from_environment({}, FeatureGates(ray_cluster_mtls=True))
    options = dataclasses.replace(options, cert_manager_available=False)
    manager.add(RayClusterController(manager.context(), options))
    with manager_running(manager):
        client.create(tls_cluster(namespace))
        [event] = recorded(client, namespace, "InvalidRayClusterSpec", "secure")
        assert (
            "tlsOptions requires cert-manager, but cert-manager is not installed" in event["note"]
        )
        # The pass ended at the refusal: not even the head Service was made.
        assert pods(client, namespace, "head") == []
        assert client.list(SERVICE, namespace)["items"] == []
