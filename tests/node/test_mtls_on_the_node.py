"""RayClusterMTLS for real: the cert-manager built here (``hack/certmanager``) beside the
real node's control plane, our operator as a pod with the gate on, and a RayCluster with
``tlsOptions.enabled``. The head and a worker start (each held by
``wait-for-tls-ip-san`` until its certificate lists its IP), the worker joins the head
over TLS (``ray status`` in the head shows two nodes), and the GCS refuses a client that
does not present a certificate of the cluster's CA, while one that does is let in.

KubeRay v1.6.2 has no such gate, so there is no KubeRay side to run; KubeRay's own e2e
test (v1.7.0 ``test/e2e/raycluster_tls_test.go``) runs its clusters on kind with
cert-manager's release."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from hack.certmanager import run as certmanager_run
from hack.localcluster import LocalCluster
from hack.raystatus import ray_status
from tests.kubeclient import fresh_namespace
from tests.node.harness import all_ready, cluster_spec, deploy_operator, pod_states, pods, ray_gone
from tests.node.harness import server_side_apply as apply
from tests.waiting import wait_for

CERTS_AND_RAY_SECONDS = 420.0 + 2 * 120.0
"""From the RayCluster's create to both pods Ready: the Ray nodes' own start on two
loaded cores (``RAY_READY_SECONDS`` of test_ray_on_the_node.py), plus, for each pod, its
IP reaching its certificate (the mTLS controller's next look, a minute at most) and the
reissued Secret reaching the pod's volume (the kubelet's sync, a minute)."""

GCS_CLIENT = textwrap.dedent("""
    import sys, grpc
    address, mode = sys.argv[1], sys.argv[2]
    tls = "/etc/ray/tls"
    read = lambda name: open(f"{tls}/{name}", "rb").read()
    if mode == "plain":
        channel = grpc.insecure_channel(address)
    elif mode == "ca-only":
        channel = grpc.secure_channel(address, grpc.ssl_channel_credentials(read("ca.crt")))
    else:
        credentials = grpc.ssl_channel_credentials(read("ca.crt"), read("tls.key"), read("tls.crt"))
        channel = grpc.secure_channel(address, credentials)
    # An RPC, not only a connection: a TLS server may finish a handshake and refuse after.
    method = "/ray.rpc.NodeInfoGcsService/GetAllNodeInfo"
    call = channel.unary_unary(method, request_serializer=None, response_deserializer=None)
    try:
        call(b"", timeout=15)
    except grpc.RpcError as error:
        print(mode, "refused:", error.code(), error.details())
        sys.exit(3)
    print(mode, "answered")
""")
"""Run with the head's Python: dials the GCS plainly, with the CA alone (no client
certificate), or with the head's own certificate and key."""


@pytest.fixture(scope="module")
def mtls_namespace(
    real_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """cert-manager running beside the control plane (its CRDs first: the operator looks
    for cert-manager.io/v1 when it starts), and our operator with the gate on."""
    work_dir = tmp_path_factory.mktemp("mtls")
    with (
        certmanager_run.running(real_cluster, work_dir / "cert-manager"),
        fresh_namespace(real_cluster, prefix="tls") as name,
        deploy_operator(real_cluster, name, work_dir, feature_gates={"RayClusterMTLS": True}),
    ):
        try:
            yield name
        finally:
            ray_gone(real_cluster, name)


def gcs_client(cluster: LocalCluster, namespace: str, head: str, mode: str) -> tuple[int, str]:
    ran = cluster.kubectl(
        "-n", namespace, "exec", head, "-c", "ray-head", "--",
        "python", "-c", GCS_CLIENT, "127.0.0.1:6379", mode, check=False,
    )  # fmt: skip
    return ran.returncode, (ran.stdout + ran.stderr)[-1500:]


def test_a_tls_cluster_joins_over_tls_and_refuses_a_client_without_the_ca(
    real_cluster: LocalCluster, mtls_namespace: str, tmp_path: Path
) -> None:
    ns = mtls_namespace
    apply(
        real_cluster,
        ns,
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "metadata": {"name": "secure"},
            "spec": {**cluster_spec(1), "tlsOptions": {"enabled": True}},
        },
    )
    wait_for(
        "the head and the worker Ready by their probes",
        lambda: all_ready(pods(real_cluster, ns, "ray.io/cluster=secure"), 2),
        timeout=CERTS_AND_RAY_SECONDS, interval=2.0, explain=lambda: pod_states(real_cluster, ns),
    )  # fmt: skip
    (head,) = pods(real_cluster, ns, "ray.io/cluster=secure,ray.io/node-type=head")
    head_name = head["metadata"]["name"]
    inits = [c["name"] for c in head["spec"]["initContainers"]]
    assert inits[0] == "wait-for-tls-ip-san"
    env = {e["name"]: e.get("value") for e in head["spec"]["containers"][0]["env"]}
    assert env["RAY_USE_TLS"] == "1"

    seen: list[str] = []

    def two_alive() -> bool:
        status = ray_status(real_cluster, ns, head_name, "ray-head")
        seen.append(status.output[-1500:])
        return status.alive == 2

    wait_for("two alive nodes in ray status", two_alive, timeout=120.0, interval=3.0,
             explain=lambda: seen[-1:])  # fmt: skip

    for mode in ("plain", "ca-only"):
        code, said = gcs_client(real_cluster, ns, head_name, mode)
        assert code == 3, f"a {mode} client was not refused: {said}"
    code, said = gcs_client(real_cluster, ns, head_name, "mutual")
    assert code == 0, f"a client with the cluster's certificate was refused: {said}"
