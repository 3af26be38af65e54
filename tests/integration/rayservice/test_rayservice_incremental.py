"""A RayService's incremental upgrade (NewClusterWithIncrementalUpgrade) on the real
control plane with the Gateway API CRDs, two real Ray heads with Serve and the
operator unmodified: traffic steps 100/0 -> 75/25 -> ... -> 0/100 through the
HTTPRoute's weights, the serve ``target_capacity`` follows by ``maxSurgePercent``, the
pending cluster is promoted; then a second upgrade is rolled back midway.

No gateway implementation runs here: ``FakeGatewayController`` writes what one would
(Gateway Accepted/Programmed, HTTPRoute ``status.parents``) through the status
subresource, and records every weight the HTTPRoute carries and every step the
RayService's status shows.

Each cluster spec points its head's dashboard and serve ports at one of two real heads
(the upgrade switches heads), so every cluster's ``target_capacity`` is its own Serve's
and each per-cluster serve Service answers with its own cluster's message. The
dashboards are reached through ``CountingProxy``, which counts the serve config PUTs.
"""

from __future__ import annotations

import copy
import http.client
import http.server
import itertools
import json
import socketserver
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from hack.localcluster import LocalCluster
from hack.localcluster.cluster import free_port
from hack.localcluster.gatewayapi import CRD_NAMES, ensure_crds
from hack.localcluster.versions import GATEWAY_API
from hack.rayhead import start_ray_head
from operator_runtime.render import gateway_ready, httproute_ready
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.errors import ApiError, NotFound
from operator_runtime.runtime.informer import EventType, Informer
from operator_runtime.runtime.kinds import (
    EVENT,
    GATEWAY,
    HTTP_ROUTE,
    RAY_CLUSTER,
    RAY_SERVICE,
    SERVICE,
    Object,
)
from tests.integration.raycluster.conftest import make_client
from tests.integration.rayjob.conftest import ClusterHosts, operator
from tests.integration.rayservice.conftest import (
    APP,
    ServeHead,
    condition,
    rayservice,
    ready,
    serve_config,
    service_status,
)
from tests.waiting import wait_for

NAME = "incr"
INTERVAL = 2
STEP = 25
MAX_SURGE = 50
CONTROLLER_NAME = "example.com/fake-gateway-controller"
SERVE_PUT = ("PUT", "/api/serve/applications/")


# -- fixtures --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gateway_crds(ray_crds: LocalCluster) -> LocalCluster:
    """The standard-channel Gateway and HTTPRoute CRDs at the pinned version."""
    for path in ensure_crds():
        text = path.read_text()
        assert f"gateway.networking.k8s.io/bundle-version: {GATEWAY_API}" in text
        assert "gateway.networking.k8s.io/channel: standard" in text
        ray_crds.apply_crds(path)
    ray_crds.wait_for_crds(*CRD_NAMES)
    return ray_crds


@pytest.fixture(scope="module")
def second_head(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Future[ServeHead]]:
    """The upgrade's second head, started in the background: the test asks for it before
    ``serve_head``, so both heads start at once (each takes 20-60 s on a busy machine)."""
    code = tmp_path_factory.mktemp("rayservice-app-2")
    (code / "rs_greeter.py").write_text(APP)

    def start() -> ServeHead:
        return ServeHead(start_ray_head({"PYTHONPATH": str(code)}), free_port())

    with ThreadPoolExecutor(max_workers=1) as pool:
        starting = pool.submit(start)
        try:
            yield starting
        finally:
            if starting.exception() is None:
                starting.result().head.stop()


class CountingProxy:
    """Plain HTTP relay on all addresses to one head's dashboard; records each request
    (method, path, and a serve PUT's ``target_capacity``)."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.requests: list[tuple[float, str, str, Any]] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _relay(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                put: tuple[Any, Any] | None = None
                if (self.command, self.path) == SERVE_PUT and body:
                    config = json.loads(body)
                    messages = {
                        (d.get("user_config") or {}).get("message")
                        for app in config.get("applications") or ()
                        for d in app.get("deployments") or ()
                    }
                    put = (config.get("target_capacity"), ",".join(sorted(map(str, messages))))
                with proxy._lock:
                    proxy.requests.append((time.monotonic(), self.command, self.path, put))
                upstream = http.client.HTTPConnection("127.0.0.1", proxy.upstream_port, timeout=60)
                try:
                    headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                    upstream.request(self.command, self.path, body=body or None, headers=headers)
                    answer = upstream.getresponse()
                    data = answer.read()
                finally:
                    upstream.close()
                self.send_response(answer.status)
                for key, value in answer.getheaders():
                    if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = _relay

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
            allow_reuse_address = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # the operator gave up waiting (its timeout): nothing to relay to

        self._server = Server(("0.0.0.0", 0), Handler)
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> CountingProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def serve_puts(self, since: float = 0.0) -> list[Any]:
        """The ``target_capacity`` of each serve config PUT since ``since``."""
        return [capacity for capacity, _ in self._puts(since)]

    def serve_messages(self, since: float = 0.0) -> set[str]:
        """The app messages the serve config PUTs since ``since`` carried."""
        return {message for _, message in self._puts(since)}

    def _puts(self, since: float) -> list[tuple[Any, str]]:
        with self._lock:
            return [
                put for t, m, p, put in self.requests if (m, p) == SERVE_PUT and t >= since and put
            ]


@dataclass
class Step:
    at: float
    active: tuple[str, Any, Any]
    """(cluster, trafficRoutedPercent, targetCapacity)"""
    pending: tuple[str, Any, Any]
    conditions: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, status: dict[str, Any]) -> Step:
        return cls(
            time.monotonic(),
            _side(status, "activeServiceStatus"),
            _side(status, "pendingServiceStatus"),
            tuple(
                (str(c["type"]), str(c["status"]))
                for c in status.get("conditions") or ()
                if c["type"] in ("UpgradeInProgress", "RollbackInProgress")
            ),
        )

    def shows(self) -> tuple[Any, ...]:
        """What the step shows, without the time it was seen."""
        return (self.active, self.pending, self.conditions)


@dataclass
class FakeGatewayController:
    """Accepts the RayService's Gateway and HTTPRoute as a gateway controller would, and
    records each distinct HTTPRoute backend list and RayService status step.

    It follows the three kinds with the operator's own informers: a step is recorded
    from each RayService event, so none is missed between polls, and the namespace
    costs no request while nothing changes (polling all three twenty times a second
    took some 60 requests a second for the test's four minutes)."""

    kube: KubeClient
    namespace: str
    routes: list[tuple[float, tuple[tuple[str, int], ...]]] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    status_writes: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _changed: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _informers: dict[str, Informer] = field(default_factory=dict)

    def __enter__(self) -> FakeGatewayController:
        for kind in (GATEWAY, HTTP_ROUTE, RAY_SERVICE):
            informer = Informer(self.kube, kind, namespaces=[self.namespace])
            informer.add_handler(self._on_event)
            self._informers[kind.kind] = informer
            informer.start()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._changed.set()
        if self._thread is not None:
            self._thread.join(5)
        for informer in self._informers.values():
            informer.stop()

    def _on_event(self, event: EventType, obj: Object, _old: Object | None) -> None:
        if obj.get("kind") == RAY_SERVICE.kind and obj["metadata"]["name"] == NAME:
            step = Step.of(obj.get("status") or {})
            if not self.steps or self.steps[-1].shows() != step.shows():
                self.steps.append(step)
        elif obj.get("kind") == HTTP_ROUTE.kind and event != "DELETED":
            backends = tuple(
                (str(ref["name"]), int(ref.get("weight", 1)))
                for ref in obj["spec"]["rules"][0].get("backendRefs") or ()
            )
            if not self.routes or self.routes[-1][1] != backends:
                self.routes.append((time.monotonic(), backends))
        self._changed.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._changed.wait(1.0)
            self._changed.clear()
            try:
                self._pass()
            except ApiError:
                continue  # a conflict or a race with the operator: the next event's pass

    def _cached(self, kind: str, name: str) -> Object | None:
        return self._informers[kind].cache.get(self.namespace, name)

    def _pass(self) -> None:
        gateway_name = f"{NAME}-gateway"
        gateway = self._cached(GATEWAY.kind, gateway_name)
        if gateway is not None and not _observed(gateway, gateway_ready(gateway)):
            gateway = copy.deepcopy(gateway)
            generation = gateway["metadata"]["generation"]
            gateway["status"] = {
                "conditions": [
                    _condition("Accepted", "Accepted", generation),
                    _condition("Programmed", "Programmed", generation),
                ]
            }
            self.kube.update_status(gateway)
            self.status_writes += 1
        route = self._cached(HTTP_ROUTE.kind, f"{NAME}-httproute")
        if route is not None:
            generation = route["metadata"]["generation"]
            parents = (route.get("status") or {}).get("parents") or ()
            current = all(
                c.get("observedGeneration") == generation
                for p in parents
                for c in p.get("conditions") or ()
            )
            if not (httproute_ready(route, gateway_name) and current):
                route = copy.deepcopy(route)
                route["status"] = {
                    "parents": [
                        {
                            "parentRef": {
                                "group": "gateway.networking.k8s.io",
                                "kind": "Gateway",
                                "name": gateway_name,
                                "namespace": self.namespace,
                            },
                            "controllerName": CONTROLLER_NAME,
                            "conditions": [
                                _condition("Accepted", "Accepted", generation),
                                _condition("ResolvedRefs", "ResolvedRefs", generation),
                            ],
                        }
                    ]
                }
                self.kube.update_status(route)
                self.status_writes += 1

    def recorded(self, status: dict[str, Any]) -> bool:
        """Whether the last step recorded shows ``status``. A test that saw a status
        first waits for this before it reads the steps: the watch may be behind it."""
        return bool(self.steps) and self.steps[-1].shows() == Step.of(status).shows()

    def weights(self, since: float) -> list[tuple[tuple[str, int], ...]]:
        return [backends for t, backends in self.routes if t >= since]

    def steps_since(self, since: float) -> list[Step]:
        return [s for s in self.steps if s.at >= since]


def _observed(obj: dict[str, Any], ready_now: bool) -> bool:
    generation = obj["metadata"]["generation"]
    conditions = (obj.get("status") or {}).get("conditions") or ()
    return ready_now and all(c.get("observedGeneration") == generation for c in conditions)


def _condition(type_: str, reason: str, generation: int) -> dict[str, Any]:
    return {
        "type": type_,
        "status": "True",
        "reason": reason,
        "message": "accepted by the test's fake gateway controller",
        "observedGeneration": generation,
        "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def _side(status: dict[str, Any], which: str) -> tuple[str, Any, Any]:
    side = status.get(which) or {}
    return (
        str(side.get("rayClusterName") or ""),
        side.get("trafficRoutedPercent"),
        side.get("targetCapacity"),
    )


# -- the RayService --------------------------------------------------------------------


@dataclass
class Head:
    serve: ServeHead
    dashboard: CountingProxy


def spec_on(head: Head, message: str) -> dict[str, Any]:
    """serveConfigV2 and rayClusterConfig of a RayService whose head is ``head``."""
    manifest = rayservice(NAME, "unused", head.serve)
    cluster = manifest["spec"]["rayClusterConfig"]
    cluster["enableInTreeAutoscaling"] = True
    ports = cluster["headGroupSpec"]["template"]["spec"]["containers"][0]["ports"]
    for port in ports:
        if port["name"] == "dashboard":
            port["containerPort"] = head.dashboard.port
    return {
        "serveConfigV2": serve_config(head.serve, message),
        "rayClusterConfig": cluster,
    }


def incremental_service(namespace: str, head: Head, message: str) -> dict[str, Any]:
    manifest = rayservice(NAME, namespace, head.serve)
    manifest["spec"].update(spec_on(head, message))
    manifest["spec"]["rayClusterDeletionDelaySeconds"] = 3
    manifest["spec"]["upgradeStrategy"] = {
        "type": "NewClusterWithIncrementalUpgrade",
        "clusterUpgradeOptions": {
            "gatewayClassName": "test",
            "stepSizePercent": STEP,
            "intervalSeconds": INTERVAL,
            "maxSurgePercent": MAX_SURGE,
        },
    }
    return manifest


def change_spec(kube: KubeClient, namespace: str, spec: dict[str, Any]) -> None:
    patch = {"spec": copy.deepcopy(spec)}
    kube.patch(RAY_SERVICE, NAME, namespace, patch)


def answer_of(kube: KubeClient, namespace: str, cluster: str, head: ServeHead) -> str:
    service = kube.get(SERVICE, f"{cluster}-serve-svc", namespace)
    return head.answer(service["spec"]["clusterIP"])


def serve_events(kube: KubeClient, namespace: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for event in kube.list(EVENT, namespace)["items"]:
        reason = str(event.get("reason"))
        if reason in ("UpdatedServeApplications", "UpdatedServeTargetCapacity"):
            count = int((event.get("series") or {}).get("count") or 1)
            counts[reason] = counts.get(reason, 0) + count
    return counts


def pending_weights(routes: list[tuple[tuple[str, int], ...]], pending: str) -> list[int]:
    found = []
    for backends in routes:
        weights = dict(backends)
        if f"{pending}-serve-svc" in weights:
            assert sum(weights.values()) == 100, backends
            found.append(weights[f"{pending}-serve-svc"])
    return found


def _dedupe(values: list[Any]) -> list[Any]:
    return [v for i, v in enumerate(values) if i == 0 or values[i - 1] != v]


# -- the test --------------------------------------------------------------------------


def test_rayservice_incremental_upgrade_and_rollback(
    second_head: Future[ServeHead],
    gateway_crds: LocalCluster,
    namespace: str,
    serve_head: ServeHead,
    tmp_path: Path,
) -> None:
    kube = make_client(gateway_crds)
    second = second_head.result()
    with (
        CountingProxy(serve_head.dashboard_port) as proxy_1,
        CountingProxy(second.dashboard_port) as proxy_2,
        ClusterHosts(kube, namespace),
        FakeGatewayController(kube, namespace) as gateway,
        operator(gateway_crds, namespace),
    ):
        _scenario(kube, namespace, Head(serve_head, proxy_1), Head(second, proxy_2), gateway)


def _scenario(
    kube: KubeClient, namespace: str, head_1: Head, head_2: Head, gateway: FakeGatewayController
) -> None:
    # 1. Create -> Ready on head 1; the Gateway and, once active, the HTTPRoute.
    started = time.monotonic()
    kube.create(incremental_service(namespace, head_1, "hello"))
    wait_for("Ready", ready(kube, namespace, NAME), timeout=180)
    status = wait_for(
        "an active cluster",
        lambda: _side(service_status(kube, namespace, NAME), "activeServiceStatus")[0],
        timeout=120,
    )
    print(f"\ncreated -> Ready with an active cluster in {time.monotonic() - started:.1f} s")
    first = status
    found = kube.get(GATEWAY, f"{NAME}-gateway", namespace)
    assert found["spec"]["gatewayClassName"] == "test"
    assert [(x["name"], x["protocol"], x["port"]) for x in found["spec"]["listeners"]] == [
        ("http", "HTTP", 80)
    ]
    route = wait_for(
        "the HTTPRoute on the active cluster",
        lambda: gateway.routes and gateway.routes[-1][1] == ((f"{first}-serve-svc", 100),),
        timeout=30,
    )
    assert route
    wait_for(
        "trafficRoutedPercent 100 on the active side",
        lambda: (
            _side(service_status(kube, namespace, NAME), "activeServiceStatus") == (first, 100, 100)
        ),
        timeout=30,
    )
    assert answer_of(kube, namespace, first, head_1.serve) == "hello"

    # 2. A cluster spec change (the head moves to head 2): the incremental upgrade.
    events_before = serve_events(kube, namespace)
    changed = time.monotonic()
    change_spec(kube, namespace, spec_on(head_2, "v2"))
    pending = wait_for(
        "a pending cluster",
        lambda: (
            service_status(kube, namespace, NAME)
            .get("pendingServiceStatus", {})
            .get("rayClusterName")
        ),
        timeout=30,
    )
    print(f"spec change -> pending cluster {pending} named in {time.monotonic() - changed:.1f} s")
    promoted = wait_for(
        "promotion of the pending cluster",
        lambda: _promoted(kube, namespace, pending),
        timeout=240,
        interval=0.2,
    )
    promoted_at = time.monotonic()
    wait_for("the promotion among the steps", lambda: gateway.recorded(promoted), timeout=10)
    full = next(
        t
        for t, backends in gateway.routes
        if t >= changed and dict(backends).get(f"{pending}-serve-svc") == 100
    )
    weights = pending_weights(gateway.weights(changed), pending)
    steps = gateway.steps_since(changed)
    seen = _dedupe([(s.active[1], s.pending[1]) for s in steps if s.pending[0] == pending])
    capacities = _dedupe([(s.active[2], s.pending[2]) for s in steps if s.pending[0] == pending])
    puts_1, puts_2 = head_1.dashboard.serve_puts(changed), head_2.dashboard.serve_puts(changed)
    events_after = serve_events(kube, namespace)
    print(f"HTTPRoute pending weights: {_dedupe(weights)}")
    print(f"status (active, pending) trafficRoutedPercent: {seen}")
    print(f"status (active, pending) targetCapacity: {capacities}")
    print(
        f"spec change -> all traffic on the new cluster: {full - changed:.1f} s; "
        f"-> promoted: {promoted_at - changed:.1f} s"
    )
    timeline = [
        (round(t - changed, 1), dict(b).get(f"{pending}-serve-svc"))
        for t, b in gateway.routes
        if t >= changed
    ]
    print(f"HTTPRoute (seconds after the spec change, pending weight): {timeline}")
    print(f"serve PUTs: old cluster {puts_1}, new cluster {puts_2}")
    print(f"serve events before {events_before}, after {events_after}")

    assert _dedupe(weights) == [0, 25, 50, 75, 100]
    traffic = [(100 - w, w) for w in _dedupe(weights)]
    assert [pair for pair in seen if pair[1] is not None] == traffic
    # maxSurgePercent 50: the new cluster's capacity rises by 50 once traffic has caught
    # up with it, then the old one's falls by 50. The last step (old cluster to 0) and
    # the promotion happen in one pass, so the status never shows (0, 100).
    assert capacities == [(100, 0), (100, 50), (50, 50), (50, 100)]
    # Traffic never outruns the new cluster's capacity.
    for s in steps:
        if s.pending[0] == pending and s.pending[1] is not None and s.pending[2] is not None:
            assert s.pending[1] <= s.pending[2], s
    # The new cluster gets its config at capacity 0 (again if the first PUT outlived the
    # operator's 2 s timeout while Serve started), then 50 and 100; the old one 50, 0.
    assert _dedupe(puts_2) == [0, 50, 100]
    assert puts_2.count(50) == puts_2.count(100) == 1
    assert puts_1 == [50, 0]
    # A capacity step re-sends the config the cluster runs, never the new one.
    assert head_1.dashboard.serve_messages(changed) == {"hello"}
    assert head_2.dashboard.serve_messages(changed) == {"v2"}
    assert promoted["activeServiceStatus"]["targetCapacity"] == 100
    assert promoted["activeServiceStatus"]["trafficRoutedPercent"] == 100
    assert "pendingServiceStatus" not in promoted or not promoted["pendingServiceStatus"]
    assert answer_of(kube, namespace, pending, head_2.serve) == "v2"
    wait_for(
        "the HTTPRoute on the new cluster alone",
        lambda: gateway.routes[-1][1] == ((f"{pending}-serve-svc", 100),),
        timeout=30,
    )
    wait_for("the old cluster deleted", lambda: _gone(kube, namespace, first), timeout=60)

    # 3. A second upgrade (back to head 1), reverted midway: a rollback.
    second = pending
    changed = time.monotonic()
    change_spec(kube, namespace, spec_on(head_1, "v3"))
    third = wait_for(
        "a second pending cluster",
        lambda: (
            service_status(kube, namespace, NAME)
            .get("pendingServiceStatus", {})
            .get("rayClusterName")
        ),
        timeout=30,
    )
    wait_for(
        "traffic midway to the second pending cluster",
        lambda: (
            (_side(service_status(kube, namespace, NAME), "pendingServiceStatus")[1] or 0) >= 25
        ),
        timeout=120,
        interval=0.1,
    )
    reverted = time.monotonic()
    change_spec(kube, namespace, spec_on(head_2, "v2"))
    wait_for(
        "RollbackInProgress",
        lambda: (
            condition(service_status(kube, namespace, NAME), "RollbackInProgress").get("status")
            == "True"
        ),
        timeout=30,
    )
    done = wait_for(
        "the rollback to finish",
        lambda: _rolled_back(kube, namespace, second),
        timeout=120,
        interval=0.2,
    )
    rolled_back_at = time.monotonic()
    wait_for("the rollback's end among the steps", lambda: gateway.recorded(done), timeout=10)
    back = _dedupe(pending_weights(gateway.weights(changed), third))
    steps = gateway.steps_since(changed)
    seen = _dedupe([(s.active[1], s.pending[1]) for s in steps if s.pending[0] == third])
    capacities = _dedupe([(s.active[2], s.pending[2]) for s in steps if s.pending[0] == third])
    conditions = _dedupe([dict(s.conditions).get("RollbackInProgress") for s in steps])
    print(f"rollback: HTTPRoute pending weights: {back}")
    print(f"rollback: status (active, pending) trafficRoutedPercent: {seen}")
    print(f"rollback: status (active, pending) targetCapacity: {capacities}")
    timeline = [
        (round(t - reverted, 1), dict(b).get(f"{third}-serve-svc"))
        for t, b in gateway.routes
        if t >= changed
    ]
    print(f"rollback: HTTPRoute (seconds after the revert, pending weight): {timeline}")
    print(f"rollback: revert -> rolled back in {rolled_back_at - reverted:.1f} s")
    print(
        f"rollback: serve PUTs head 1 {head_1.dashboard.serve_puts(changed)}, "
        f"head 2 {head_2.dashboard.serve_puts(changed)}"
    )
    # Up by steps until the revert, then back down by steps to 0.
    peak = back.index(max(back))
    assert max(back) >= STEP and back[-1] == 0, back
    assert back[: peak + 1] == sorted(back[: peak + 1]), back
    assert back[peak:] == sorted(back[peak:], reverse=True), back
    assert all(abs(a - b) == STEP for a, b in itertools.pairwise(back)), back
    assert "True" in conditions and conditions[-1] is None
    assert done["activeServiceStatus"]["rayClusterName"] == second
    assert done["activeServiceStatus"]["trafficRoutedPercent"] == 100
    assert done["activeServiceStatus"]["targetCapacity"] == 100
    assert condition(done, "UpgradeInProgress")["status"] == "False"
    wait_for(
        "the HTTPRoute on the active cluster alone",
        lambda: gateway.routes[-1][1] == ((f"{second}-serve-svc", 100),),
        timeout=30,
    )
    wait_for("the rolled-back cluster deleted", lambda: _gone(kube, namespace, third), timeout=60)
    assert answer_of(kube, namespace, second, head_2.serve) == "v2"
    # The pending cluster: its config at capacity 0, one step to 50, back to 0.
    rollback_puts = head_1.dashboard.serve_puts(changed)
    assert _dedupe(rollback_puts) == [0, 50, 0] and rollback_puts.count(50) == 1
    assert head_1.dashboard.serve_messages(changed) == {"v3"}
    assert head_2.dashboard.serve_messages(changed) == set(), "no PUT to the active cluster"
    # The Gateway never changed: comparing only what the controller sets, the API
    # server's defaults (a listener's allowedRoutes) cause no update.
    events = {str(e.get("reason")) for e in kube.list(EVENT, namespace)["items"]}
    assert "CreatedGateway" in events and "UpdatedGateway" not in events, events


def _promoted(kube: KubeClient, namespace: str, pending: str) -> dict[str, Any] | None:
    status = service_status(kube, namespace, NAME)
    if (status.get("activeServiceStatus") or {}).get("rayClusterName") != pending:
        return None
    if (status.get("pendingServiceStatus") or {}).get("rayClusterName"):
        return None
    if condition(status, "UpgradeInProgress").get("status") != "False":
        return None
    return status


def _rolled_back(kube: KubeClient, namespace: str, active: str) -> dict[str, Any] | None:
    status = service_status(kube, namespace, NAME)
    if (status.get("activeServiceStatus") or {}).get("rayClusterName") != active:
        return None
    if (status.get("pendingServiceStatus") or {}).get("rayClusterName"):
        return None
    if condition(status, "RollbackInProgress"):
        return None
    if condition(status, "UpgradeInProgress").get("status") != "False":
        return None
    return status


def _gone(kube: KubeClient, namespace: str, cluster: str) -> bool:
    try:
        kube.get(RAY_CLUSTER, cluster, namespace)
    except NotFound:
        return True
    return False
