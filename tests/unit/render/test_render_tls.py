"""RayClusterMTLS's pure half (``render/tls.py``), shaped after KubeRay v1.7.0's
TestConfigureTLS_*, TestSetContainerTLSConfig (common/pod_test.go) and the PKI parts of
raycluster_mtls_controller_test.go (CreatesFullPKI, WorkerCertHasLocalhostOnly,
UpdatesIPAddresses' desired spec, TestCertificateNeedsUpdate). The controller's reads and
writes run against the real API server and cert-manager in tests/integration/mtls."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from operator_runtime.api import FeatureGates, RayCluster
from operator_runtime.api.labels import NodeType
from operator_runtime.render import PodParams, RenderOptions, build_pod, tls
from operator_runtime.render.containers import add_tls_config
from operator_runtime.render.tls import TLSParams

MTLS = FeatureGates(ray_cluster_mtls=True)
UID = "abcdef12-3456-4789-8abc-def012345678"
TLS_ENV = {
    "RAY_USE_TLS": "1",
    "RAY_TLS_SERVER_CERT": "/etc/ray/tls/tls.crt",
    "RAY_TLS_SERVER_KEY": "/etc/ray/tls/tls.key",
    "RAY_TLS_CA_CERT": "/etc/ray/tls/ca.crt",
}
TLS_MOUNT = {"name": "ray-tls", "readOnly": True, "mountPath": "/etc/ray/tls"}


def cluster(
    *, enabled: bool | None = True, autoscaling: bool = False, autoscaler_env: Any = None
) -> RayCluster:
    spec: dict[str, Any] = {
        "headGroupSpec": {
            "rayStartParams": {},
            "template": {"spec": {"containers": [{"name": "ray-head", "image": "ray:2.52.0"}]}},
        },
        "workerGroupSpecs": [
            {
                "groupName": "small",
                "replicas": 1,
                "rayStartParams": {},
                "template": {
                    "spec": {"containers": [{"name": "ray-worker", "image": "ray:2.52.0"}]}
                },
            }
        ],
        "enableInTreeAutoscaling": autoscaling,
    }
    if autoscaler_env is not None:
        spec["autoscalerOptions"] = {"env": autoscaler_env}
    if enabled is not None:
        spec["tlsOptions"] = {"enabled": enabled}
    return RayCluster.model_validate(
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "metadata": {"name": "raycluster-tls", "namespace": "default", "uid": UID},
            "spec": spec,
        }
    )


def pod(raycluster: RayCluster, node_type: NodeType, gates: FeatureGates = MTLS) -> Any:
    params = PodParams(
        cluster=raycluster,
        node_type=node_type,
        group_name="" if node_type is NodeType.HEAD else "small",
        options=RenderOptions(feature_gates=gates),
    )
    return build_pod(params=params)


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value") for e in container.get("env") or ()}


def container(spec: dict[str, Any], name: str, key: str = "containers") -> dict[str, Any]:
    [found] = [c for c in spec.get(key) or () if c["name"] == name]
    return found


@pytest.mark.parametrize(
    ("enabled", "gates"),
    [(True, FeatureGates()), (False, MTLS), (None, MTLS)],
    ids=["gate-off", "disabled", "no-tls-options"],
)
def test_no_tls_without_the_gate_and_enabled(enabled: bool | None, gates: FeatureGates) -> None:
    for node_type in (NodeType.HEAD, NodeType.WORKER):
        spec = pod(cluster(enabled=enabled), node_type, gates)["spec"]
        assert "ray-tls" not in [v["name"] for v in spec.get("volumes") or ()]
        assert "RAY_USE_TLS" not in env_of(spec["containers"][0])
        names = [c["name"] for c in spec.get("initContainers") or ()]
        assert tls.WAIT_FOR_TLS_IP_SAN not in names


def test_head_pod_mounts_the_head_secret_and_waits_for_its_ip_first() -> None:
    spec = pod(cluster(), NodeType.HEAD)["spec"]
    [volume] = [v for v in spec["volumes"] if v["name"] == "ray-tls"]
    assert volume == {"name": "ray-tls", "secret": {"secretName": "ray-head-secret-raycluster-tls"}}
    ray = spec["containers"][0]
    assert TLS_ENV.items() <= env_of(ray).items()
    assert TLS_MOUNT in ray["volumeMounts"]
    wait = spec["initContainers"][0]
    assert wait["name"] == "wait-for-tls-ip-san"
    assert wait["image"] == "ray:2.52.0"
    assert wait["command"] == ["sh", "-c"]
    assert 'CERT="/etc/ray/tls/tls.crt"' in wait["args"][0]
    assert "IP Address:${POD_IP}" in wait["args"][0]
    assert wait["env"][0] == {
        "name": "POD_IP",
        "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}},
    }
    assert wait["volumeMounts"] == [TLS_MOUNT]
    assert wait["resources"] == {
        "limits": {"cpu": "50m", "memory": "64Mi"},
        "requests": {"cpu": "50m", "memory": "64Mi"},
    }


def test_worker_pod_mounts_the_worker_secret_and_tls_reaches_wait_gcs_ready() -> None:
    spec = pod(cluster(), NodeType.WORKER)["spec"]
    [volume] = [v for v in spec["volumes"] if v["name"] == "ray-tls"]
    assert volume["secret"] == {"secretName": "ray-worker-secret-raycluster-tls"}
    assert [c["name"] for c in spec["initContainers"]] == ["wait-for-tls-ip-san", "wait-gcs-ready"]
    wait_gcs = container(spec, "wait-gcs-ready", "initContainers")
    assert TLS_ENV.items() <= env_of(wait_gcs).items()
    assert TLS_MOUNT in wait_gcs["volumeMounts"]


def test_autoscaler_gets_tls_before_the_users_env() -> None:
    with_env = cluster(autoscaling=True, autoscaler_env=[{"name": "EXTRA", "value": "x"}])
    autoscaler = container(pod(with_env, NodeType.HEAD)["spec"], "autoscaler")
    names = [e["name"] for e in autoscaler["env"]]
    assert names.index("RAY_TLS_CA_CERT") < names.index("EXTRA")
    assert TLS_ENV.items() <= env_of(autoscaler).items()
    assert TLS_MOUNT in autoscaler["volumeMounts"]


def test_set_container_tls_config_adds_once_and_keeps_what_is_there() -> None:
    target: dict[str, Any] = {
        "name": "c",
        "env": [{"name": "RAY_USE_TLS", "value": "0"}],
        "volumeMounts": [{"name": "custom", "mountPath": "/etc/ray/tls"}],
    }
    add_tls_config(target)
    once = copy.deepcopy(target)
    add_tls_config(target)
    assert target == once
    assert env_of(target)["RAY_USE_TLS"] == "0"  # the container's own value stays
    assert [e["name"] for e in target["env"]] == list(TLS_ENV)
    assert target["volumeMounts"] == [{"name": "custom", "mountPath": "/etc/ray/tls"}]


def test_configure_pod_twice_changes_nothing() -> None:
    spec = pod(cluster(), NodeType.WORKER)["spec"]
    again = copy.deepcopy(spec)
    tls.configure_pod(spec=again, cluster=cluster(), node_type=NodeType.WORKER)
    assert again == spec


def test_pki_names_durations_and_usages() -> None:
    params = TLSParams(cluster=cluster())
    selfsigned = tls.build_selfsigned_issuer(params=params)
    ca = tls.build_ca_certificate(params=params)
    ca_issuer = tls.build_ca_issuer(params=params)
    assert selfsigned["metadata"]["name"] == "ray-selfsigned-issuer-raycluster-tls"
    assert selfsigned["spec"] == {"selfSigned": {}}
    assert ca["metadata"]["name"] == "ray-ca-certificate-raycluster-tls"
    assert ca["spec"] == {
        "secretName": "raycluster-tls-ca-secret-abcdef12",
        "isCA": True,
        "commonName": "ray-ca-raycluster-tls",
        "privateKey": {"algorithm": "RSA", "size": 4096},
        "duration": "87600h0m0s",
        "renewBefore": "720h0m0s",
        "usages": ["cert sign", "crl sign"],
        "issuerRef": {
            "name": "ray-selfsigned-issuer-raycluster-tls",
            "kind": "Issuer",
            "group": "cert-manager.io",
        },
    }
    assert ca_issuer["metadata"]["name"] == "ray-ca-issuer-raycluster-tls"
    assert ca_issuer["spec"] == {"ca": {"secretName": "raycluster-tls-ca-secret-abcdef12"}}
    for built in (selfsigned, ca, ca_issuer):
        metadata = built["metadata"]
        assert built["apiVersion"] == "cert-manager.io/v1"
        assert metadata["namespace"] == "default"
        assert metadata["labels"]["ray.io/cluster"] == "raycluster-tls"
        assert metadata["labels"]["app.kubernetes.io/created-by"] == "kuberay-operator"
        assert metadata["ownerReferences"] == [
            {"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": "raycluster-tls",
             "uid": UID, "controller": True, "blockOwnerDeletion": True},
        ]  # fmt: skip
    assert ca["metadata"]["labels"]["app.kubernetes.io/component"] == "ca-certificate"


def test_head_certificate_names_the_service_and_head_ips_only() -> None:
    params = TLSParams(
        cluster=cluster(), head_ips=("10.0.0.5", "10.0.0.5", ""), worker_ips=("10.0.0.9",)
    )
    head = tls.build_leaf_certificate(params=params, node_type=NodeType.HEAD)
    assert head["metadata"]["name"] == "ray-head-cert-raycluster-tls"
    assert head["metadata"]["labels"]["app.kubernetes.io/component"] == "head-certificate"
    assert head["spec"] == {
        "secretName": "ray-head-secret-raycluster-tls",
        "duration": "2160h0m0s",
        "renewBefore": "360h0m0s",
        "dnsNames": ["localhost", "raycluster-tls-head-svc.default.svc.cluster.local"],
        "ipAddresses": ["10.0.0.5", "127.0.0.1"],
        "usages": ["digital signature", "key encipherment", "server auth", "client auth"],
        "issuerRef": {
            "name": "ray-ca-issuer-raycluster-tls",
            "kind": "Issuer",
            "group": "cert-manager.io",
        },
    }


def test_worker_certificate_has_localhost_and_every_worker_ip() -> None:
    params = TLSParams(
        cluster=cluster(), head_ips=("10.0.0.5",), worker_ips=("10.0.0.9", "10.0.0.10")
    )
    worker = tls.build_leaf_certificate(params=params, node_type=NodeType.WORKER)
    assert worker["metadata"]["name"] == "ray-worker-cert-raycluster-tls"
    assert worker["spec"]["secretName"] == "ray-worker-secret-raycluster-tls"
    assert worker["spec"]["dnsNames"] == ["localhost"]
    assert worker["spec"]["ipAddresses"] == ["10.0.0.10", "10.0.0.9", "127.0.0.1"]


def test_certificate_needs_update_compares_sans_as_sets_and_labels() -> None:
    params = TLSParams(cluster=cluster(), worker_ips=("10.0.0.9", "10.0.0.10"))
    desired = tls.build_leaf_certificate(params=params, node_type=NodeType.WORKER)
    reordered = copy.deepcopy(desired)
    reordered["spec"]["ipAddresses"].reverse()
    assert not tls.certificate_needs_update(reordered, desired)
    fewer = copy.deepcopy(desired)
    fewer["spec"]["ipAddresses"] = ["127.0.0.1"]
    assert tls.certificate_needs_update(fewer, desired)
    relabelled = copy.deepcopy(desired)
    relabelled["metadata"]["labels"]["extra"] = "x"
    assert tls.certificate_needs_update(relabelled, desired)
    other_dns = copy.deepcopy(desired)
    other_dns["spec"]["dnsNames"] = ["localhost", "example.com"]
    assert tls.certificate_needs_update(other_dns, desired)


@pytest.mark.parametrize(
    ("status", "observed", "ready"),
    [("True", 2, True), ("True", 1, False), ("False", 2, False), (None, None, False)],
    ids=["ready", "stale-generation", "not-ready", "no-condition"],
)
def test_certificate_ready_needs_the_current_generation(
    status: str | None, observed: int | None, ready: bool
) -> None:
    conditions = [] if status is None else [
        {"type": "Ready", "status": status, "observedGeneration": observed}
    ]  # fmt: skip
    certificate = {"metadata": {"generation": 2}, "status": {"conditions": conditions}}
    assert tls.certificate_ready(certificate) is ready
