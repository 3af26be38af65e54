"""Serve through the dashboard on a real Ray head: what the RayService controller relies on.

The application's module sits in a directory on the head's ``PYTHONPATH`` (the worker's
kept head, ``tests/rayhead.py``), the way an image ships the user's code; its proxy
listens on a free port of all addresses.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from hack.localcluster.cluster import free_port
from hack.rayhead import RayHead
from operator_runtime.clients import (
    Addressing,
    DashboardClient,
    DashboardPool,
    DashboardUnavailable,
    Endpoint,
    ServeDetails,
    serve_proxy_endpoint,
)
from tests.rayhead import app_dir, serving

SERVE_TIMEOUT = 120.0
APP = """
from ray import serve


@serve.deployment(ray_actor_options={"num_cpus": 0})
class Greeter:
    def __call__(self, request):
        return "hello from serve"


app = Greeter.bind()
"""


@pytest.fixture(scope="module")
def serve_port() -> int:
    """One proxy port for the module: Serve keeps the http_options it started with."""
    return free_port()


@pytest.fixture(scope="module")
def serve_head(
    module_ray_head: RayHead,
    serve_port: int,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[RayHead]:
    """The worker's kept head (``tests/rayhead.py``) with the app on its path."""
    (app_dir(tmp_path_factory) / "contract_greeter.py").write_text(APP)
    with serving(module_ray_head, serve_port):
        yield module_ray_head


@pytest.fixture(scope="module")
def pool() -> Iterator[DashboardPool]:
    with DashboardPool() as pool:
        yield pool


@pytest.fixture
def dashboard(serve_head: RayHead, pool: DashboardPool) -> DashboardClient:
    return pool.dashboard(Endpoint(serve_head.dashboard_url, deadline=60))


def wait_for_app(dashboard: DashboardClient, name: str, status: str) -> ServeDetails:
    started = time.monotonic()
    while True:
        details = dashboard.serve_details()
        app = details.applications.get(name)
        if app is not None and app.status == status:
            return details
        if time.monotonic() - started > SERVE_TIMEOUT:
            raise TimeoutError(f"application {name} never reached {status}: {details}")
        time.sleep(1)


def config(port: int, *apps: dict[str, str]) -> dict[str, object]:
    return {"http_options": {"host": "0.0.0.0", "port": port}, "applications": list(apps)}


def test_an_application_is_deployed_and_its_proxy_is_healthy(
    dashboard: DashboardClient, pool: DashboardPool, serve_port: int
) -> None:
    port = serve_port
    started = time.monotonic()
    dashboard.deploy_serve(
        config(
            port,
            {"name": "greeter", "route_prefix": "/greet", "import_path": "contract_greeter:app"},
        )
    )
    details = wait_for_app(dashboard, "greeter", "RUNNING")
    print(f"\nserve: greeter RUNNING {time.monotonic() - started:.1f} s after the deploy")
    app = details.applications["greeter"]
    assert app.route_prefix == "/greet"
    assert {d.name: d.status for d in app.deployments.values()} == {"Greeter": "HEALTHY"}

    proxy = serve_proxy_endpoint(
        addressing=Addressing.DIRECT,
        pod_ip="127.0.0.1",
        pod_name="unused",
        namespace="unused",
        port=port,
    )
    deadline = time.monotonic() + 30
    while not pool.serve_proxy(proxy).healthy():
        assert time.monotonic() < deadline, "the serve proxy never became healthy"
        time.sleep(0.5)


def test_a_broken_import_path_fails_with_a_message(
    dashboard: DashboardClient, serve_port: int
) -> None:
    # A declarative config replaces the whole set of applications.
    dashboard.deploy_serve(
        config(
            serve_port,
            {"name": "broken", "route_prefix": "/broken", "import_path": "no_such_module:app"},
        )
    )
    details = wait_for_app(dashboard, "broken", "DEPLOY_FAILED")
    assert "no_such_module" in details.applications["broken"].message


def test_a_closed_proxy_port_is_unavailable(pool: DashboardPool) -> None:
    proxy = serve_proxy_endpoint(
        addressing=Addressing.DIRECT,
        pod_ip="127.0.0.1",
        pod_name="unused",
        namespace="unused",
        port=free_port(),
    )
    with pytest.raises(DashboardUnavailable):
        pool.serve_proxy(proxy).healthy()
