"""A real Ray head reached the two ways the operator reaches one in a cluster, with
nothing test-only in the path:

- directly, by the head service's DNS name (mapped to this machine in the sandbox's
  private ``/etc/hosts``, as cluster DNS would map it to the head pod);
- through the API server's service proxy: a kwok pod with the head's dashboard port, a
  Service selecting it, kube-controller-manager publishing its endpoints, and the API
  server dialing the pod's IP, which the sandbox routes to this machine, where the real
  head listens on all addresses.
"""

from __future__ import annotations

import json
import ssl
import time
from typing import Any

import httpx
import pytest

from hack.localcluster import LocalCluster
from hack.rayhead import RayHead
from operator_runtime.clients.dashboard import Addressing, DashboardPool, dashboard_endpoint
from tests import rayhead
from tests.headaccess import apiserver_tls, mapped_host

module_ray_head = rayhead.module_ray_head  # the shared module-scoped head
ray_head = rayhead.ray_head  # ... started again if it died
RAY_VERSION_KEYS = {"ray_version", "version"}


def _apply(cluster: LocalCluster, namespace: str, manifest: dict[str, Any]) -> None:
    cluster.kubectl("-n", namespace, "apply", "-f", "-", input=json.dumps(manifest))


def _head_pod_and_service(
    cluster: LocalCluster, namespace: str, service: str, dashboard_port: int
) -> str:
    """A head pod the way a RayCluster's looks to the service proxy; returns its IP."""
    labels = {"ray.io/node-type": "head", "ray.io/cluster": "proxy-probe"}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "proxy-probe-head", "labels": labels},
        "spec": {
            "containers": [
                {
                    "name": "ray-head",
                    "image": "rayproject/ray",
                    "ports": [{"name": "dashboard", "containerPort": dashboard_port}],
                }
            ]
        },
    }
    head_service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": service},
        "spec": {
            "selector": labels,
            "ports": [{"name": "dashboard", "port": 8265, "targetPort": "dashboard"}],
        },
    }
    _apply(cluster, namespace, pod)
    _apply(cluster, namespace, head_service)
    cluster.kubectl("-n", namespace, "wait", "--for=condition=Ready", "pod/proxy-probe-head",
                    "--timeout=60s")  # fmt: skip
    address: str = cluster.get_json("-n", namespace, "pod", "proxy-probe-head")["status"]["podIP"]
    return address


def test_direct_by_the_head_service_name(ray_head: RayHead) -> None:
    name = "probe-head-svc.direct-ns.svc.cluster.local"
    with mapped_host(name):
        answer = httpx.get(f"http://{name}:{ray_head.dashboard_port}/api/version", timeout=5)
    assert answer.status_code == 200, answer.text
    assert answer.json().keys() >= RAY_VERSION_KEYS
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://{name}:{ray_head.dashboard_port}/api/version", timeout=5)


def test_through_the_api_servers_service_proxy(
    local_cluster: LocalCluster, namespace: str, ray_head: RayHead
) -> None:
    pod_ip = _head_pod_and_service(local_cluster, namespace, "probe-head-svc",
                                   ray_head.dashboard_port)  # fmt: skip
    assert pod_ip.startswith("10.244."), pod_ip
    access = apiserver_tls(local_cluster.kubeconfig)
    endpoint = dashboard_endpoint(
        addressing=Addressing.KUBERNETES_PROXY, head_service="probe-head-svc",
        namespace=namespace, api_server=access.server, port="dashboard",
    )  # fmt: skip
    assert endpoint.base_url == (
        f"{local_cluster.server}/api/v1/namespaces/{namespace}"
        "/services/probe-head-svc:dashboard/proxy"
    )
    with DashboardPool(verify=access.ssl_context, headers=access.headers) as pool:
        http = pool.http()
        waiting_since = time.monotonic()
        while True:
            # Until kube-controller-manager publishes the pod's endpoints the proxy says 503.
            started = time.monotonic()
            answer = http.get(f"{endpoint.base_url}/api/version", timeout=endpoint.deadline)
            took = time.monotonic() - started
            if answer.status_code != 503 or started - waiting_since > 60:
                break
            time.sleep(0.1)
        assert answer.status_code == 200, answer.text
        assert answer.json().keys() >= RAY_VERSION_KEYS
        print(
            f"service proxy answered {time.monotonic() - waiting_since:.2f}s after the pod was "
            f"Ready; that request took {took * 1000:.0f} ms"
        )

        timings = []
        for _ in range(10):
            started = time.monotonic()
            version = http.get(f"{endpoint.base_url}/api/version", timeout=endpoint.deadline)
            assert version.status_code == 200
            timings.append(time.monotonic() - started)
        print(f"through the proxy, warm: median {sorted(timings)[5] * 1000:.1f} ms")
        assert pool.dashboard(endpoint).list_jobs() == []  # the project's client, too

    ca_only = ssl.create_default_context(cafile=str(local_cluster.pki.ca_cert))
    anonymous = httpx.get(f"{endpoint.base_url}/api/version", verify=ca_only, timeout=5)
    assert anonymous.status_code in (401, 403), "the proxy is open to anyone"
