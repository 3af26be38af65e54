"""The RayService controller against the real control plane and a real Ray Serve.

The operator runs as users run it (``python -m operator_runtime``). kwok runs the
RayService's clusters without containers; every cluster's head is the module's one real
Ray head with Serve, whose proxy listens on all addresses (``http_options`` in the
test's serve config), so:

- the operator's proxy health check dials the kwok head pod's IP and port ``serve``,
  which the sandbox routes to this machine: it reaches the real proxy;
- the dashboard is reached by the head Service's name (``ClusterHosts``) or, with
  ``--use-kubernetes-proxy``, through the API server;
- the serve Service gets its endpoints from the real EndpointSlice controller, and its
  ClusterIP (routed to loopback) answers on the serve port: the app answers over HTTP.

Two kwok clusters may share the one real head (a blue/green switch): Serve on it keeps
one set of applications, which is what both clusters would run.
"""

from __future__ import annotations

import copy
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from hack.localcluster.cluster import free_port
from hack.localhttp import LOCAL_HTTP
from hack.rayhead import RayHead
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.kinds import RAY_SERVICE, Object
from tests.integration.raycluster.conftest import (  # noqa: F401 (fixtures)
    container,
    gc_knows_rayclusters,
    gc_probe,
    make_client,
    ray_crds,
)
from tests.integration.rayjob.conftest import ClusterHosts, operator  # noqa: F401
from tests.rayhead import app_dir, module_ray_head, serving  # noqa: F401 (a fixture)
from tests.waiting import wait_for

APP = """
from ray import serve


@serve.deployment(ray_actor_options={"num_cpus": 0})
class Greeter:
    def __init__(self):
        self.message = "hello"

    def reconfigure(self, config):
        self.message = config.get("message", "hello")

    def __call__(self, request):
        return self.message


app = Greeter.bind()
"""


@dataclass
class ServeHead:
    head: RayHead
    serve_port: int

    @property
    def dashboard_port(self) -> int:
        return self.head.dashboard_port

    def answer(self, host: str = "127.0.0.1") -> str:
        return LOCAL_HTTP.get(f"http://{host}:{self.serve_port}/", timeout=5).text


@pytest.fixture
def kube(ray_crds: Any) -> KubeClient:  # noqa: F811
    return make_client(ray_crds)


@pytest.fixture(scope="module")
def serve_head(
    module_ray_head: RayHead,  # noqa: F811 (a fixture)
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[ServeHead]:
    """The worker's kept head with the greeter app on its path, and the port the module's
    Serve proxy listens on (Serve shut down at the module's end: ``serving``)."""
    (app_dir(tmp_path_factory) / "rs_greeter.py").write_text(APP)
    serve = ServeHead(module_ray_head, free_port())
    with serving(module_ray_head, serve.serve_port):
        yield serve


def serve_config(head: ServeHead, message: str = "hello") -> str:
    return textwrap.dedent(
        f"""\
        http_options:
          host: 0.0.0.0
          port: {head.serve_port}
        applications:
          - name: greeter
            import_path: rs_greeter:app
            route_prefix: /
            deployments:
              - name: Greeter
                user_config:
                  message: {message}
        """
    )


def rayservice(name: str, namespace: str, head: ServeHead, **spec: Any) -> dict[str, Any]:
    """A RayService whose clusters' head is ``head``: dashboard and serve ports declared."""
    head_container = container("ray-head")
    head_container["ports"] = [
        {"name": "dashboard", "containerPort": head.dashboard_port},
        {"name": "serve", "containerPort": head.serve_port},
    ]
    manifest: dict[str, Any] = {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "serveConfigV2": serve_config(head),
            "rayClusterConfig": {
                "rayVersion": "2.52.1",
                "headGroupSpec": {"template": {"spec": {"containers": [head_container]}}},
                "workerGroupSpecs": [
                    {
                        "groupName": "small",
                        "replicas": 1,
                        "minReplicas": 0,
                        "maxReplicas": 2,
                        "template": {"spec": {"containers": [container("ray-worker")]}},
                    }
                ],
            },
        },
    }
    manifest["spec"].update(copy.deepcopy(spec))
    return manifest


def service_status(kube: KubeClient, namespace: str, name: str) -> dict[str, Any]:
    found: Object = kube.get(RAY_SERVICE, name, namespace)
    status: dict[str, Any] = found.get("status") or {}
    return status


def active_cluster(kube: KubeClient, namespace: str, name: str) -> str:
    """The RayService's active cluster ("" while it has none)."""
    active = service_status(kube, namespace, name).get("activeServiceStatus") or {}
    return str(active.get("rayClusterName") or "")


def condition(status: dict[str, Any], type_: str) -> dict[str, Any]:
    for item in status.get("conditions") or ():
        if item.get("type") == type_:
            return dict(item)
    return {}


def ready(kube: KubeClient, namespace: str, name: str) -> Any:
    def check() -> dict[str, Any] | None:
        status = service_status(kube, namespace, name)
        return status if condition(status, "Ready").get("status") == "True" else None

    return check


def create_ready(kube: KubeClient, namespace: str, manifest: dict[str, Any]) -> dict[str, Any]:
    """Create the RayService, wait for Ready; the status that said so."""
    kube.create(manifest)
    status: dict[str, Any] = wait_for(
        "Ready", ready(kube, namespace, manifest["metadata"]["name"]), timeout=180
    )
    return status


def start_ready(kube: KubeClient, namespace: str, manifest: dict[str, Any]) -> str:
    """Create the RayService, wait for Ready; the active cluster's name."""
    return str(create_ready(kube, namespace, manifest)["activeServiceStatus"]["rayClusterName"])


def change_head(
    kube: KubeClient, namespace: str, name: str, change: Callable[[dict[str, Any]], object]
) -> None:
    """``change`` the RayService's head pod spec and write it back: a cluster spec change
    no in-place update can apply, so a blue/green upgrade."""
    found = kube.get(RAY_SERVICE, name, namespace)
    change(found["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"])
    kube.update(found)


def add_head_env(kube: KubeClient, namespace: str, name: str, value: str) -> None:
    """An upgrade whose new head gets one more environment variable."""
    change_head(
        kube, namespace, name,
        lambda head: head["containers"][0].setdefault("env", []).append(
            {"name": "UPGRADE", "value": value}
        ),
    )  # fmt: skip
