"""Where the dashboard client dials, in each addressing mode, and the pool's sharing."""

from __future__ import annotations

import httpx
import pytest

import operator_runtime.clients as clients_pkg
from operator_runtime.clients import (
    Addressing,
    DashboardPool,
    JobSubmission,
    dashboard_endpoint,
    serve_proxy_endpoint,
)


def test_direct_mode_dials_the_head_service_by_name() -> None:
    endpoint = dashboard_endpoint(
        addressing=Addressing.DIRECT,
        head_service="demo-head-svc",
        namespace="ml",
        cluster_domain="corp.local",
    )
    assert endpoint.base_url == "http://demo-head-svc.ml.svc.corp.local:8265"
    assert endpoint.deadline == 2.0


def test_proxy_mode_goes_through_the_api_servers_service_proxy() -> None:
    endpoint = dashboard_endpoint(
        addressing=Addressing.KUBERNETES_PROXY,
        head_service="demo-head-svc",
        namespace="ml",
        api_server="https://127.0.0.1:6443/",
        port="dashboard",
    )
    assert endpoint.base_url == (
        "https://127.0.0.1:6443/api/v1/namespaces/ml/services/demo-head-svc:dashboard/proxy"
    )
    assert endpoint.deadline == 10.0


def test_proxy_mode_without_an_api_server_is_refused() -> None:
    with pytest.raises(ValueError, match="API server"):
        dashboard_endpoint(addressing=Addressing.KUBERNETES_PROXY, head_service="h", namespace="n")


def test_serve_proxy_by_pod_ip_or_through_the_pod_proxy() -> None:
    direct = serve_proxy_endpoint(
        addressing=Addressing.DIRECT, pod_ip="10.244.0.7", pod_name="p", namespace="n"
    )
    assert direct.base_url == "http://10.244.0.7:8000"
    proxied = serve_proxy_endpoint(
        addressing=Addressing.KUBERNETES_PROXY,
        pod_ip="10.244.0.7",
        pod_name="demo-head-x1",
        namespace="n",
        api_server="https://api:6443",
    )
    assert proxied.base_url == "https://api:6443/api/v1/namespaces/n/pods/demo-head-x1:8000/proxy"


def test_the_pool_shares_one_http_client_for_every_head_until_closed() -> None:
    pool = DashboardPool(transport=httpx.MockTransport(lambda request: httpx.Response(200)))
    a = dashboard_endpoint(addressing=Addressing.DIRECT, head_service="a", namespace="n")
    b = dashboard_endpoint(addressing=Addressing.DIRECT, head_service="b", namespace="n")
    first = pool.dashboard(a, token="t")._http
    assert pool.dashboard(b)._http is first
    pool.close()
    assert first.is_closed
    with pytest.raises(RuntimeError, match="closed"):
        pool.dashboard(a)


@pytest.mark.parametrize(
    ("pod_ip", "base_url"),
    [
        ("10.244.0.7", "http://10.244.0.7:8000"),
        ("fd00:10:244::7", "http://[fd00:10:244::7]:8000"),
        ("::1", "http://[::1]:8000"),
    ],
)
def test_an_ipv6_pod_ip_is_bracketed(pod_ip: str, base_url: str) -> None:
    endpoint = serve_proxy_endpoint(
        addressing=Addressing.DIRECT, pod_ip=pod_ip, pod_name="p", namespace="n"
    )
    assert endpoint.base_url == base_url
    assert httpx.URL(endpoint.base_url).host == pod_ip


def test_a_submission_leaves_out_empty_fields() -> None:
    full = JobSubmission(
        entrypoint="python run.py",
        submission_id="s-1",
        runtime_env={"pip": ["numpy"]},
        metadata={"owner": "ml"},
        entrypoint_num_cpus=1.5,
        entrypoint_num_gpus=0,
        entrypoint_resources={},
    )
    assert full.body() == {
        "entrypoint": "python run.py",
        "submission_id": "s-1",
        "runtime_env": {"pip": ["numpy"]},
        "metadata": {"owner": "ml"},
        "entrypoint_num_cpus": 1.5,
    }


def test_exports_are_complete() -> None:
    # The order is ruff's (RUF022); this checks that nothing public is left out.
    public = {name for name in vars(clients_pkg) if not name.startswith("_")}
    public -= {"dashboard", "errors", "models"}
    assert set(clients_pkg.__all__) == public
    assert len(clients_pkg.__all__) == len(public)
