"""The RayService controller across restarts, at scale and beside objects not its own.

- SIGKILL mid incremental upgrade: the restarted operator has an empty serve-config
  cache; the old (active) cluster, still carrying traffic, must keep the applications it
  was given while its ``target_capacity`` steps down (``CountingProxy`` records every
  serve PUT each head receives, with the app messages it carried).
- A serve-config cache smaller than the RayServices (2 for 3): each still reaches Ready
  and is not PUT again on every pass (the operator runs in-process here, the cache size
  being a constructor option, not a flag).
- A Gateway and an HTTPRoute of the RayService's names made by someone else are never
  updated or deleted, neither while it upgrades nor when it is suspended.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Any

from hack.localcluster import LocalCluster
from operator_runtime import controllers
from operator_runtime.controllers.rayservice.controller import RayServiceController
from operator_runtime.controllers.rayservice.options import RayServiceOptions
from operator_runtime.controllers.rendering import gates_of
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.kinds import EVENT, GATEWAY, HTTP_ROUTE, RAY_SERVICE
from operator_runtime.runtime.manager import Manager, ManagerOptions
from operator_runtime.runtime.registry import ControllerRegistry
from tests.integration.managers import manager_running
from tests.integration.raycluster.conftest import make_client
from tests.integration.rayjob.conftest import ClusterHosts, operator
from tests.integration.rayservice.conftest import (
    ServeHead,
    condition,
    rayservice,
    ready,
    service_status,
)
from tests.integration.rayservice.test_rayservice_incremental import (  # noqa: F401 (fixtures)
    NAME,
    CountingProxy,
    FakeGatewayController,
    Head,
    _promoted,
    _side,
    change_spec,
    gateway_crds,
    incremental_service,
    second_head,
    spec_on,
)
from tests.waiting import wait_for


def test_a_sigkill_mid_upgrade_never_puts_the_new_apps_on_the_active_cluster(
    second_head: Future[ServeHead],  # noqa: F811 (asked first: it starts in the background)
    gateway_crds: LocalCluster,  # noqa: F811
    namespace: str,
    serve_head: ServeHead,
) -> None:
    kube = make_client(gateway_crds)
    second = second_head.result()
    with (
        CountingProxy(serve_head.dashboard_port) as proxy_1,
        CountingProxy(second.dashboard_port) as proxy_2,
        ClusterHosts(kube, namespace),
        FakeGatewayController(kube, namespace),
    ):
        head_1, head_2 = Head(serve_head, proxy_1), Head(second, proxy_2)
        first = operator(gateway_crds, namespace).__enter__()
        try:
            kube.create(incremental_service(namespace, head_1, "hello"))
            wait_for("Ready", ready(kube, namespace, NAME), timeout=180)
            old = wait_for(
                "the active side at 100 % traffic",
                lambda: _active_at_full(kube, namespace),
                timeout=60,
            )
            change_spec(kube, namespace, spec_on(head_2, "v2"))
            # Midway: traffic has begun to move, the old cluster still has all its
            # capacity, so its steps down (100 -> 50 -> 0) are the restarted operator's.
            wait_for(
                "traffic midway, the old cluster at full capacity",
                lambda: _midway(kube, namespace),
                timeout=180,
                interval=0.1,
            )
        finally:
            assert first.process is not None
            first.process.kill()
            first.process.wait()
            first.exit_code = first.process.returncode
        killed = time.monotonic()
        at_kill = service_status(kube, namespace, NAME)["pendingServiceStatus"]
        print(f"\nSIGKILL mid-upgrade, pending side: {at_kill}")
        with operator(gateway_crds, namespace):
            pending = str(
                service_status(kube, namespace, NAME)["pendingServiceStatus"]["rayClusterName"]
            )
            wait_for(
                "promotion after the restart",
                lambda: _promoted(kube, namespace, pending),
                timeout=240,
                interval=0.2,
            )
        puts_old, puts_new = proxy_1.serve_puts(killed), proxy_2.serve_puts(killed)
        print(f"after the restart: serve PUTs old cluster {puts_old}, new cluster {puts_new}")
        messages_old, messages_new = proxy_1.serve_messages(killed), proxy_2.serve_messages(killed)
        print(f"apps' messages PUT: old cluster {messages_old}, new cluster {messages_new}")
        assert old
        assert messages_old == {"hello"}, "the new apps reached the old cluster"
        assert puts_old and puts_old[-1] == 0, "the old cluster's capacity went down to 0"
        assert messages_new <= {"v2"}


def _active_at_full(kube: KubeClient, namespace: str) -> str | None:
    name, traffic, capacity = _side(service_status(kube, namespace, NAME), "activeServiceStatus")
    return name if (traffic, capacity) == (100, 100) else None


def _midway(kube: KubeClient, namespace: str) -> bool:
    status = service_status(kube, namespace, NAME)
    _, _, active_capacity = _side(status, "activeServiceStatus")
    _, pending_traffic, _ = _side(status, "pendingServiceStatus")
    return active_capacity == 100 and (pending_traffic or 0) >= 25


# -- a cache smaller than the RayServices ----------------------------------------------


@contextmanager
def in_process_operator(
    cluster: LocalCluster, namespace: str, cache_size: int
) -> Iterator[Manager]:
    """The RayCluster controller and a RayService controller whose serve-config cache
    holds ``cache_size`` RayServices."""
    manager = Manager(
        make_client(cluster),
        ManagerOptions(
            namespaces=(namespace,), concurrency=2, metrics_address="0", health_address="0",
            shutdown_timeout=10,
        ),
    )  # fmt: skip
    context = manager.context()
    registry = ControllerRegistry()
    controllers.register(registry)
    for controller in registry.build(context, ["raycluster"]):
        manager.add(controller)
    options = RayServiceOptions.from_settings(
        context.settings, gates_of(context), context.configuration
    )
    options = dataclasses.replace(options, serve_config_cache_size=cache_size)
    service_controller = RayServiceController(context, options)
    manager.add(service_controller)
    try:
        with manager_running(manager):
            yield manager
    finally:
        # The connections to the heads (dashboard, serve proxy): the manager closes a
        # controller's at shutdown through its ``close()``, which the RayService
        # controller does not have yet, so they would be left to the garbage collector
        # and fail the next test with unclosed sockets. Closing the pool is idempotent:
        # still right once the manager closes it.
        service_controller.tools.dashboards.close()


def test_three_rayservices_with_a_cache_of_two_are_ready_and_not_put_again(
    ray_crds: LocalCluster, namespace: str, serve_head: ServeHead
) -> None:
    kube = make_client(ray_crds)
    names = ("svc-a", "svc-b", "svc-c")
    with (
        CountingProxy(serve_head.dashboard_port) as proxy,
        ClusterHosts(kube, namespace),
        in_process_operator(ray_crds, namespace, cache_size=2),
    ):
        for name in names:
            manifest = rayservice(name, namespace, serve_head)
            head = manifest["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]
            for port in head["containers"][0]["ports"]:
                if port["name"] == "dashboard":
                    port["containerPort"] = proxy.port
            kube.create(manifest)
        for name in names:
            wait_for(f"{name} Ready", ready(kube, namespace, name), timeout=180)
        settled = time.monotonic()
        # Every RayService is polled every 2 s: 5 passes each.
        time.sleep(10)
        puts = proxy.serve_puts(settled)
        print(f"\n3 RayServices, cache of 2: serve PUTs in 10 s after all Ready: {len(puts)}")
        assert puts == [], "a RayService whose cluster runs its config is PUT again"
        for name in names:
            status = service_status(kube, namespace, name)
            assert condition(status, "Ready").get("status") == "True", (name, status)


# -- a Gateway and an HTTPRoute that are not ours --------------------------------------


def _foreign(kind: str, name: str, namespace: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def test_a_gateway_and_httproute_not_ours_are_never_modified_or_deleted(
    gateway_crds: LocalCluster,  # noqa: F811
    namespace: str,
    serve_head: ServeHead,
) -> None:
    kube = make_client(gateway_crds)
    gateway = kube.create(
        _foreign(
            "Gateway",
            f"{NAME}-gateway",
            namespace,
            {
                "gatewayClassName": "theirs",
                "listeners": [{"name": "web", "port": 8080, "protocol": "HTTP"}],
            },
        )
    )
    route = kube.create(
        _foreign(
            "HTTPRoute",
            f"{NAME}-httproute",
            namespace,
            {
                "parentRefs": [{"name": "elsewhere"}],
                "rules": [{"backendRefs": [{"name": "their-svc", "port": 80}]}],
            },
        )
    )
    versions = {
        "Gateway": gateway["metadata"]["resourceVersion"],
        "HTTPRoute": route["metadata"]["resourceVersion"],
    }

    def changed() -> list[Any]:
        return [
            (kind, found)
            for kind, found in (
                ("Gateway", kube.get(GATEWAY, f"{NAME}-gateway", namespace)),
                ("HTTPRoute", kube.get(HTTP_ROUTE, f"{NAME}-httproute", namespace)),
            )
            if found["metadata"]["resourceVersion"] != versions[kind]
            or found["metadata"].get("deletionTimestamp")
        ]

    names = {f"{NAME}-gateway", f"{NAME}-httproute"}

    with (
        CountingProxy(serve_head.dashboard_port) as proxy,
        ClusterHosts(kube, namespace),
        operator(gateway_crds, namespace),
    ):
        kube.create(incremental_service(namespace, Head(serve_head, proxy), "hello"))
        wait_for("Ready", ready(kube, namespace, NAME), timeout=180)
        wait_for(
            "Warnings naming the foreign Gateway and HTTPRoute (or a change to them)",
            lambda: _warned(kube, namespace, names) or changed(),
            timeout=60,
        )
        assert changed() == []
        assert _warned(kube, namespace, names)
        kube.patch(RAY_SERVICE, NAME, namespace, {"spec": {"suspend": True}})
        wait_for(
            "Suspended",
            lambda: (
                condition(service_status(kube, namespace, NAME), "Suspended").get("status")
                == "True"
            ),
            timeout=120,
        )
        assert changed() == []


def _warned(kube: KubeClient, namespace: str, names: set[str]) -> bool:
    seen = set()
    for event in kube.list(EVENT, namespace)["items"]:
        note = str(event.get("note") or event.get("message") or "")
        if event.get("type") == "Warning" and "not owned by this RayService" in note:
            seen |= {n for n in names if f"{namespace}/{n} " in note}
    return seen == names
