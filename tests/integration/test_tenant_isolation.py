"""One operator shared by many teams (issue 25): a tenant with edit rights in namespace A
tries every known path to reach namespace B, stall the operator or crash it.

The tenant is a real ServiceAccount bound to the built-in ``edit`` ClusterRole (plus a
Role for the Ray and Gateway API kinds, which ``edit`` does not aggregate); it never acts
as admin. The operator is the one ``RayOperator`` deploys by default, watching every
namespace: its RBAC and arguments are rendered by the component (``tenancy.py``) and it
runs locally under its own ServiceAccount's token, behind a proxy that records every
request. B holds a RayCluster someone else manages, a Service and a Secret with a Ray
token, none of which the operator has any business touching: a request of the operator
that names B is a breach.

Each attack passes if it is refused where it enters (the API server, naming the field),
or refused by the operator (a status or condition naming the field), or inert (nothing
outside A); the waits are bounded by what the operator promises: a validation verdict on
the first pass, a RayCluster ready within 30 s.
"""

from __future__ import annotations

import base64
import re
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hack.localcluster import LocalCluster
from hack.localcluster.gatewayapi import CRD_NAMES, ensure_crds
from hack.rayhead import RayHead
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.errors import HttpError, NotFound
from operator_runtime.runtime.kinds import (
    GATEWAY,
    RAY_CLUSTER,
    RAY_JOB,
    RAY_SERVICE,
    SECRET,
    SERVICE,
)
from tests.integration.raycluster.conftest import (  # noqa: F401 (fixtures)
    container,
    gc_probe,
    make_client,
    ray_crds,
    raycluster,
)
from tests.integration.rayjob.conftest import ClusterHosts
from tests.integration.rayservice.conftest import ServeHead, rayservice, serve_head  # noqa: F401
from tests.integration.tenancy import (
    DeployedOperator,
    RenderedOperator,
    apply,
    describe,
    make_tenant,
    render_operator,
    touches,
)
from tests.kubeclient import delete_namespace
from tests.rayhead import module_ray_head  # noqa: F401 (serve_head's)
from tests.waiting import wait_for

pytestmark = pytest.mark.timeout(300)

VICTIM_CLUSTER = "prod"
VICTIM_SERVICE = "kube-dns-like"
VICTIM_SECRET = "prod-ray-token"
VICTIM_TOKEN = "victim-" + uuid.uuid4().hex
READY_SECONDS = 30.0
"""What the operator promises for a small RayCluster on kwok."""
PASS_SECONDS = 3.0
"""After a status write, the pass it triggers (watch event, queue) has come and gone."""
VERDICT_SECONDS = 10.0
"""A validation verdict comes on the object's first pass (issue: within 1 s of the pass);
the margin is for a loaded machine's watch and queue."""
INT32_MAX = 2**31 - 1
UNREACHED_HEAD = ServeHead(RayHead(None, Path("/nonexistent"), 8265, 0.0), 8000)  # type: ignore[arg-type]
"""Ports for a RayService that never gets as far as its head."""


# -- the stage ---------------------------------------------------------------------------


class Stage:
    def __init__(
        self, cluster: LocalCluster, admin: KubeClient, tenant: KubeClient,
        a: str, b: str, operator: DeployedOperator, rendered: RenderedOperator,
    ) -> None:  # fmt: skip
        self.cluster, self.admin, self.tenant = cluster, admin, tenant
        self.a, self.b = a, b
        self.operator, self.rendered = operator, rendered

    def requests_into_b(self, mark: int, aiming_at: str = "") -> list[str]:
        """What the operator sent into B since ``mark`` (whose path contains ``aiming_at``:
        on today's code an earlier attack's object keeps reaching B on every pass)."""
        into = [r for r in self.operator.since(mark) if touches(r, self.b)]
        return describe([r for r in into if aiming_at in r.request.path])

    def assert_nothing_in_b(self, mark: int, aiming_at: str = "") -> None:
        into_b = self.requests_into_b(mark, aiming_at)
        assert not into_b, (
            f"the operator sent requests into the victim namespace {self.b}: {into_b}"
        )

    def watch_for_breach(
        self, mark: int, seconds: float, done: Callable[[], bool], aiming_at: str = ""
    ) -> None:
        """Poll until ``done`` or ``seconds``; fail at once on a request into B."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.assert_nothing_in_b(mark, aiming_at)
            if done():
                return
            time.sleep(0.2)
        self.assert_nothing_in_b(mark, aiming_at)


# What the authorizer says when RBAC denies a request. Other 403s are admission's, e.g.
# "error looking up service account" when a reconcile from a cache that has not yet
# seen a deleted RayCluster creates a pod whose ServiceAccount the GC already took.
RBAC_REFUSAL = re.compile(r'forbidden: User \\?"[^"\\]+\\?" cannot ', re.IGNORECASE)


def _namespace(cluster: LocalCluster, prefix: str) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    cluster.kubectl("create", "namespace", name)
    return name


@pytest.fixture(scope="module")
def stage(ray_crds: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stage]:  # noqa: F811
    cluster = ray_crds
    for path in ensure_crds():
        cluster.apply_crds(path)
    cluster.wait_for_crds(*CRD_NAMES, "rayjobs.ray.io", "rayservices.ray.io")
    work = tmp_path_factory.mktemp("tenancy")
    a, b = _namespace(cluster, "tenant-a"), _namespace(cluster, "victim-b")
    admin = make_client(cluster)
    _victims(cluster, admin, b)
    rendered = render_operator(f"ray-op-{uuid.uuid4().hex[:6]}")
    cluster.kubectl("create", "namespace", rendered.namespace)
    apply(cluster, rendered.rbac, work)
    tenant = make_tenant(cluster, a, work)
    with DeployedOperator(cluster, rendered, work) as operator:
        yield Stage(cluster, admin, tenant, a, b, operator, rendered)
        assert operator.alive(), f"the operator died:\n{operator.tail()}"
        refused = [line for line in operator.log().splitlines() if RBAC_REFUSAL.search(line)]
        assert not refused, f"the rendered RBAC refused the operator: {refused[:5]}"
    for name in (a, b, rendered.namespace):
        delete_namespace(cluster, name)
    cluster.kubectl("delete", "clusterrolebinding,clusterrole", rendered.namespace, check=False)


def _victims(cluster: LocalCluster, admin: KubeClient, b: str) -> None:
    """What another team has in B: a ready RayCluster managed by someone else (so this
    operator has no reason ever to touch B), a Service, a Secret with a Ray token."""
    victim = raycluster(VICTIM_CLUSTER, b, workers=0, managedBy="kueue.x-k8s.io/multikueue")
    admin.create(victim)
    cluster.kubectl(
        "-n", b, "patch", "raycluster", VICTIM_CLUSTER, "--subresource=status", "--type=merge",
        "-p", '{"status": {"state": "ready"}}',
    )  # fmt: skip
    admin.create({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": VICTIM_SERVICE, "namespace": b},
        "spec": {"selector": {"app": "victim"}, "ports": [{"name": "dns", "port": 53}]},
    })  # fmt: skip
    admin.create({
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": VICTIM_SECRET, "namespace": b},
        "data": {"auth_token": base64.b64encode(VICTIM_TOKEN.encode()).decode()},
    })  # fmt: skip


# -- helpers -----------------------------------------------------------------------------


def create_or_refused(tenant: KubeClient, manifest: dict[str, Any], field: str) -> bool:
    """True: the API server took it; False: it refused it, naming ``field``."""
    try:
        tenant.create(manifest)
    except HttpError as exc:
        assert exc.status in (400, 422) and field in str(exc), (
            f"the API server refused {manifest['kind']} {manifest['metadata']['name']} without "
            f"naming {field}: {exc}"
        )
        return False
    return True


def rayjob(name: str, namespace: str, **spec: Any) -> dict[str, Any]:
    head = container("ray-head")
    head["ports"] = [{"name": "dashboard", "containerPort": 8265}]
    return {
        "apiVersion": "ray.io/v1", "kind": "RayJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "entrypoint": "python -c \"print('hello')\"",
            "rayClusterSpec": {
                "rayVersion": "2.52.1",
                "headGroupSpec": {"template": {"spec": {"containers": [head]}}},
                "workerGroupSpecs": [{
                    "groupName": "small", "replicas": 0, "minReplicas": 0, "maxReplicas": 1,
                    "template": {"spec": {"containers": [container("ray-worker")]}},
                }],
            },
            **spec,
        },
    }  # fmt: skip


def status_of(client: KubeClient, kind: Any, namespace: str, name: str) -> dict[str, Any]:
    try:
        found = client.get(kind, name, namespace)
    except NotFound:
        return {}
    status: dict[str, Any] = found.get("status") or {}
    return status


def ready_condition(status: dict[str, Any]) -> dict[str, Any]:
    for item in status.get("conditions") or ():
        if item.get("type") == "Ready":
            return dict(item)
    return {}


def wait(what: str, check: Callable[[], Any], seconds: float, explain: Callable[[], Any]) -> Any:
    """``wait_for`` at this module's pace: a status read every 0.2 s."""
    return wait_for(what, check, seconds, 0.2, explain=explain)


def alias_bomb(levels: int = 7, width: int = 9) -> str:
    """A YAML mapping of nested aliases: ~400 bytes that expand to width**levels strings."""
    lines = ["a0: &a0 [" + ",".join(["lol"] * width) + "]"]
    for level in range(1, levels):
        refs = ",".join([f"*a{level - 1}"] * width)
        lines.append(f"a{level}: &a{level} [{refs}]")
    return "\n".join(lines) + "\n"


def cluster_becomes_ready(stage: Stage, name: str) -> None:
    """A RayCluster created now in A becomes ready: the operator still serves everyone."""
    stage.tenant.create(raycluster(name, stage.a, workers=1))
    wait(
        f"RayCluster {stage.a}/{name}, created after the attack, to become ready",
        lambda: status_of(stage.admin, RAY_CLUSTER, stage.a, name).get("state") == "ready",
        READY_SECONDS,
        lambda: (status_of(stage.admin, RAY_CLUSTER, stage.a, name),
                 stage.operator.alive(), stage.operator.tail(15)),
    )  # fmt: skip


# -- names that reach a URL path ---------------------------------------------------------


@pytest.mark.parametrize(
    "selector", ["../../{b}/rayclusters/{x}", "x/../../../{b}/rayclusters/{x}"]
)
def test_cluster_selector_cannot_reach_another_namespace(stage: Stage, selector: str) -> None:
    name = f"sel-{uuid.uuid4().hex[:6]}"
    value = selector.format(b=stage.b, x=VICTIM_CLUSTER)
    mark = stage.operator.mark()
    manifest = rayjob(name, stage.a, clusterSelector={"ray.io/cluster": value})
    del manifest["spec"]["rayClusterSpec"]
    if not create_or_refused(stage.tenant, manifest, "clusterSelector"):
        return
    # Accepted: the operator must refuse it or look only in A. Its first pass writes a
    # status; the next (triggered by that write) looks the cluster up.
    stage.watch_for_breach(
        mark, VERDICT_SECONDS,
        lambda: status_of(stage.admin, RAY_JOB, stage.a, name).get("jobDeploymentStatus")
        in ("Initializing", "ValidationFailed"),
    )  # fmt: skip
    stage.watch_for_breach(mark, PASS_SECONDS, lambda: False)
    status = status_of(stage.admin, RAY_JOB, stage.a, name)
    assert status.get("jobDeploymentStatus") in (None, "", "New", "Initializing",
                                                 "ValidationFailed"), status  # fmt: skip
    stage.tenant.delete(RAY_JOB, name, stage.a)


def test_serve_service_name_cannot_overwrite_a_service_in_another_namespace(
    stage: Stage,
    serve_head: ServeHead,  # noqa: F811
) -> None:
    name = "rs-escape"
    before = stage.admin.get(SERVICE, VICTIM_SERVICE, stage.b)
    mark = stage.operator.mark()
    manifest = rayservice(
        name, stage.a, serve_head,
        serveService={"metadata": {"name": f"../../{stage.b}/services/{VICTIM_SERVICE}"}},
    )  # fmt: skip
    with ClusterHosts(stage.admin, stage.a):
        if create_or_refused(stage.tenant, manifest, "serveService"):

            def verdict() -> bool:
                condition = ready_condition(status_of(stage.admin, RAY_SERVICE, stage.a, name))
                return condition.get("status") == "True" or (
                    condition.get("reason") == "ValidationFailed"
                    and "serveService" in str(condition.get("message"))
                )

            # Serving on the real head takes tens of seconds; a refusal comes at once.
            stage.watch_for_breach(mark, 120, verdict, f"/services/{VICTIM_SERVICE}")
            assert verdict(), ready_condition(status_of(stage.admin, RAY_SERVICE, stage.a, name))
            time.sleep(2)  # one more pass after Ready switches the Services
            stage.assert_nothing_in_b(mark, f"/services/{VICTIM_SERVICE}")
            stage.tenant.delete(RAY_SERVICE, name, stage.a)
    after = stage.admin.get(SERVICE, VICTIM_SERVICE, stage.b)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"], (
        f"Service {stage.b}/{VICTIM_SERVICE} was changed: selector {after['spec'].get('selector')}"
    )


def test_auth_secret_name_cannot_fetch_another_namespaces_token(stage: Stage) -> None:
    """A cluster whose token Secret is named ``../../B/secrets/x``: the operator would
    read B's token and send it to the tenant's own head (its dashboard)."""
    name = f"tok-{uuid.uuid4().hex[:6]}"
    manifest = rayjob(name, stage.a, submissionMode="HTTPMode")
    cluster_spec = manifest["spec"]["rayClusterSpec"]
    cluster_spec["authOptions"] = {
        "mode": "token", "secretName": f"../../{stage.b}/secrets/{VICTIM_SECRET}",
    }  # fmt: skip
    # The tenant's containers carry their own token variable, so the pods need no Secret
    # and the cluster becomes ready: only the operator ever reads the named Secret.
    for spec in (cluster_spec["headGroupSpec"], cluster_spec["workerGroupSpecs"][0]):
        spec["template"]["spec"]["containers"][0]["env"] = [
            {"name": "RAY_AUTH_TOKEN", "value": "tenant-own"}
        ]
    mark = stage.operator.mark()
    if not create_or_refused(stage.tenant, manifest, "secretName"):
        return

    def verdict() -> bool:
        status = status_of(stage.admin, RAY_JOB, stage.a, name)
        return status.get("jobDeploymentStatus") == "ValidationFailed" or bool(
            status.get("dashboardURL")
        )

    # Running within READY_SECONDS (the dashboard URL set); the next pass dials the head
    # with the token: by then B's Secret has been read, or never will be.
    stage.watch_for_breach(mark, READY_SECONDS, verdict, "/secrets/")
    stage.watch_for_breach(mark, PASS_SECONDS, lambda: False, "/secrets/")
    assert verdict(), status_of(stage.admin, RAY_JOB, stage.a, name)
    stage.tenant.delete(RAY_JOB, name, stage.a)


# -- YAML that expands -------------------------------------------------------------------


def test_alias_bomb_in_runtime_env_is_refused_and_the_operator_serves_on(stage: Stage) -> None:
    name = f"bomb-{uuid.uuid4().hex[:6]}"
    bomb = alias_bomb()
    assert len(bomb) < 500
    manifest = rayjob(name, stage.a, runtimeEnvYAML=bomb)
    started = time.monotonic()
    try:
        if create_or_refused(stage.tenant, manifest, "runtimeEnvYAML"):
            status = wait(
                "the RayJob with an alias bomb in runtimeEnvYAML to be refused",
                lambda: (s := status_of(stage.admin, RAY_JOB, stage.a, name)).get(
                    "jobDeploymentStatus") == "ValidationFailed" and s,
                VERDICT_SECONDS,
                lambda: status_of(stage.admin, RAY_JOB, stage.a, name),
            )  # fmt: skip
            assert "runtimeEnvYAML" in str(status.get("message")), status
        print(f"\nalias bomb in runtimeEnvYAML refused after {time.monotonic() - started:.2f} s")
        cluster_becomes_ready(stage, f"after-{name}")
    finally:
        stage.tenant.delete(RAY_JOB, name, stage.a)


def test_alias_bomb_in_serve_config_is_refused_and_the_operator_serves_on(stage: Stage) -> None:
    name = f"bomb-{uuid.uuid4().hex[:6]}"
    manifest = rayservice(name, stage.a, UNREACHED_HEAD)
    manifest["spec"]["serveConfigV2"] = alias_bomb()
    try:
        if create_or_refused(stage.tenant, manifest, "serveConfigV2"):
            wait(
                "the RayService with an alias bomb in serveConfigV2 to be refused",
                lambda: (c := ready_condition(status_of(stage.admin, RAY_SERVICE, stage.a, name)))
                .get("reason") == "ValidationFailed" and "serveConfigV2" in str(c.get("message")),
                VERDICT_SECONDS,
                lambda: status_of(stage.admin, RAY_SERVICE, stage.a, name),
            )  # fmt: skip
        cluster_becomes_ready(stage, f"after-{name}")
    finally:
        stage.tenant.delete(RAY_SERVICE, name, stage.a)


# -- numbers, deletion, ownership, privileges ---------------------------------------------


def test_active_deadline_beyond_int32_is_refused_or_harmless(stage: Stage) -> None:
    name = f"int-{uuid.uuid4().hex[:6]}"
    manifest = rayjob(name, stage.a, activeDeadlineSeconds=100_000_000_000_000)
    if not create_or_refused(stage.tenant, manifest, "activeDeadlineSeconds"):
        return
    try:
        stored = stage.admin.get(RAY_JOB, name, stage.a)["spec"]["activeDeadlineSeconds"]
        assert stored > INT32_MAX  # the API server kept it: then the operator must cope

        def progressed() -> bool:
            status = status_of(stage.admin, RAY_JOB, stage.a, name)
            if status.get("jobDeploymentStatus") == "ValidationFailed":
                return "activeDeadlineSeconds" in str(status.get("message"))
            cluster = status.get("rayClusterName")
            return bool(cluster) and stage.admin.find(RAY_CLUSTER, cluster, stage.a) is not None

        wait(
            "a RayJob with activeDeadlineSeconds 1e14 to be refused or given its cluster",
            progressed, VERDICT_SECONDS,
            lambda: (status_of(stage.admin, RAY_JOB, stage.a, name),
                     stage.operator.lines("Overflow")),
        )  # fmt: skip
    finally:
        stage.tenant.delete(RAY_JOB, name, stage.a)


def test_deleting_a_rayjob_whose_token_secret_lost_auth_token_ends(stage: Stage) -> None:
    name = f"del-{uuid.uuid4().hex[:6]}"
    manifest = rayjob(name, stage.a, submissionMode="HTTPMode")
    manifest["spec"]["rayClusterSpec"]["authOptions"] = {"mode": "token"}
    stage.tenant.create(manifest)
    status = wait(
        "the token-auth RayJob to get its dashboard URL",
        lambda: (s := status_of(stage.admin, RAY_JOB, stage.a, name)).get("dashboardURL") and s,
        READY_SECONDS,
        lambda: status_of(stage.admin, RAY_JOB, stage.a, name),
    )  # fmt: skip
    secret_name = status["rayClusterName"]
    secret = wait(
        "the operator to create the cluster's token Secret",
        lambda: stage.tenant.find(SECRET, secret_name, stage.a), VERDICT_SECONDS, lambda: None,
    )  # fmt: skip
    # The tenant (edit rights) empties its own Secret, then deletes the RayJob.
    stage.tenant.update({**secret, "data": {"other": base64.b64encode(b"x").decode()}})
    stage.tenant.delete(RAY_JOB, name, stage.a)
    wait(
        "the deletion of a RayJob whose token Secret lacks auth_token to end",
        lambda: stage.admin.find(RAY_JOB, name, stage.a) is None,
        VERDICT_SECONDS,
        lambda: ((stage.admin.find(RAY_JOB, name, stage.a) or {}).get("metadata", {})
                 .get("finalizers"),
                 stage.operator.lines(name)),
    )  # fmt: skip


def test_gateway_not_owned_by_the_rayservice_is_left_alone(stage: Stage) -> None:
    name = f"gw-{uuid.uuid4().hex[:6]}"
    gateway_name = f"{name}-gateway"
    tenant_gateway = {
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
        "metadata": {"name": gateway_name, "namespace": stage.a},
        "spec": {"gatewayClassName": "team-a-own",
                 "listeners": [{"name": "web", "port": 8080, "protocol": "HTTP"}]},
    }  # fmt: skip
    before = stage.tenant.create(tenant_gateway)
    mark = stage.operator.mark()
    manifest = rayservice(name, stage.a, UNREACHED_HEAD)
    manifest["spec"]["serveConfigV2"] = "applications: []\n"
    manifest["spec"]["rayClusterConfig"]["enableInTreeAutoscaling"] = True
    manifest["spec"]["upgradeStrategy"] = {
        "type": "NewClusterWithIncrementalUpgrade",
        "clusterUpgradeOptions": {"gatewayClassName": "istio", "stepSizePercent": 25,
                                  "intervalSeconds": 2, "maxSurgePercent": 50},
    }  # fmt: skip
    stage.tenant.create(manifest)
    try:
        gateway_path = GATEWAY.path(stage.a, gateway_name)

        def reached() -> bool:
            return any(r.request.path == gateway_path for r in stage.operator.since(mark))

        wait("the operator to look at the Gateway", reached, READY_SECONDS,
             lambda: status_of(stage.admin, RAY_SERVICE, stage.a, name))  # fmt: skip
        time.sleep(3)  # a few more passes
        after = stage.admin.get(GATEWAY, gateway_name, stage.a)
        writes = [r for r in describe(stage.operator.since(mark)) if gateway_path in r
                  and not r.startswith("GET")]  # fmt: skip
        assert not writes and after["spec"] == before["spec"], (
            f"the operator changed a Gateway it does not own: {writes}; "
            f"gatewayClassName {after['spec'].get('gatewayClassName')}"
        )
    finally:
        stage.tenant.delete(RAY_SERVICE, name, stage.a)


def test_operator_rbac_grants_no_proxy_without_use_kubernetes_proxy(stage: Stage) -> None:
    args = stage.rendered.container.get("args", [])
    assert not any(a.startswith("--use-kubernetes-proxy") for a in args), args
    granted = {
        (group, resource, verb)
        for rule in stage.rendered.cluster_role["rules"]
        for group in rule["apiGroups"] for resource in rule["resources"] for verb in rule["verbs"]
    }  # fmt: skip
    proxies = sorted(t for t in granted if t[1] in ("pods/proxy", "services/proxy"))
    cron = sorted(t for t in granted if t[1].startswith("raycronjobs"))
    subject = f"system:serviceaccount:{stage.rendered.namespace}:{stage.rendered.service_account}"
    # `can-i create pods/proxy` would ask about a pod named "proxy": name the subresource.
    can = {
        f"{resource}/proxy": stage.cluster.kubectl(
            "auth", "can-i", "create", resource, "--subresource=proxy", "-n", stage.a,
            f"--as={subject}", check=False,
        ).stdout.strip()
        for resource in ("pods", "services")
    }  # fmt: skip
    assert not proxies and set(can.values()) == {"no"}, (
        f"the operator may dial any pod or Service in any namespace through the API server: "
        f"{proxies} (can-i in {stage.a}: {can})"
    )
    assert not cron, f"the RayCronJob gate is off, yet the ClusterRole grants {cron}"
