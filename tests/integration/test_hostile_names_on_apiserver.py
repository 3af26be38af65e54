"""A tenant's names never reach another namespace, on the real control plane.

A tenant in namespace A names objects in its specs: the RayCluster of a RayJob's
``clusterSelector``, a RayService's serve Service, a cluster's auth token Secret. Named
``../../B/...``, such a name used to become a request path that urllib3 collapsed into
namespace B (a read of B's cluster, an overwrite of B's Service, B's token sent to A's
head). Three layers refuse it now, each tested here:

- the CRDs (pattern, or CEL with a field path): ``kubectl apply`` fails, naming the field;
- the controllers' validation: with the CRD rules removed (an older CRD, say), the
  operator parks the object with a Warning event naming the field;
- the client: the controller steps that read by these names raise ``InvalidName``
  before any request.

Every request the operator sends goes through the fault proxy, whose log shows that
none of them reached namespace B.
"""

from __future__ import annotations

import base64
import copy
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from hack.localcluster import LocalCluster
from operator_runtime.api.common import OBJECT_NAME_PATTERN
from operator_runtime.api.crds import load_bundle
from operator_runtime.clients import DashboardPool
from operator_runtime.controllers.dashboards import Dashboards
from operator_runtime.controllers.rayservice import switch as rayservice_switch
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.errors import Invalid, InvalidName
from operator_runtime.runtime.kinds import NAMESPACE, RAY_JOB, SECRET, SERVICE, Object
from operator_runtime.runtime.ratelimit import TokenBucket
from operator_runtime.runtime.transport import UrllibTransport, load_configuration
from tests.faultproxy import FaultProxy
from tests.integration.raycluster.conftest import (  # noqa: F401 (fixtures)
    client,
    events,
    gc_probe,
    ray_crds,
    raycluster,
)
from tests.operatorprocess import OperatorProcess
from tests.waiting import wait_for

REPO_ROOT = Path(__file__).resolve().parents[2]
CRD_DIR = REPO_ROOT / "operator_runtime" / "api" / "crds"
VALIDATION_WAIT = 60.0
"""A RayJob or RayService is validated on its first pass: the operator's start-up (a
subprocess, its informers' first lists) plus one reconcile, on a loaded machine."""


@pytest.fixture
def victim(client: KubeClient, namespace: str) -> Iterator[str]:  # noqa: F811
    """Namespace B: a RayCluster ``x``, a Service ``dns`` and a token Secret ``token``."""
    name = f"{namespace}-b"
    client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    client.create(raycluster("x", name, workers=0))
    client.create({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "dns", "namespace": name},
        "spec": {"ports": [{"name": "dns", "port": 53}], "selector": {"app": "dns"}},
    })  # fmt: skip
    client.create({
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "token", "namespace": name},
        "data": {"auth_token": base64.b64encode(b"b-secret").decode()},
    })  # fmt: skip
    yield name
    client.delete(NAMESPACE, name)


def _reaching(proxy: FaultProxy, victim: str) -> list[str]:
    """Requests that arrived for namespace B (as the API server saw their path)."""
    return [
        f"{record.request.method} {record.request.path}"
        for record in proxy.log
        if f"/namespaces/{victim}/" in record.request.path
        or record.request.path.endswith(f"/namespaces/{victim}")
    ]


def _proxied_client(proxy: FaultProxy) -> KubeClient:
    transport = UrllibTransport(load_configuration(str(proxy.kubeconfig)))
    return KubeClient(transport, limiter=TokenBucket(1000, 2000))


# -- the CRDs refuse them where they enter ------------------------------------------


def _kubectl_create(cluster: LocalCluster, manifest: Object) -> str:
    result = cluster.kubectl(
        "create", "--validate=strict", "-f", "-", input=yaml.safe_dump(manifest), check=False
    )
    return "" if result.returncode == 0 else result.stderr


def _job(name: str, namespace: str, selected: str) -> Object:
    return {
        "apiVersion": "ray.io/v1", "kind": "RayJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"entrypoint": "true", "clusterSelector": {"ray.io/cluster": selected}},
    }  # fmt: skip


def _service(name: str, namespace: str, serve_name: str) -> Object:
    return {
        "apiVersion": "ray.io/v1", "kind": "RayService",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "serveConfigV2": "applications: []\n",
            "serveService": {"metadata": {"name": serve_name}},
            "rayClusterConfig": raycluster("unused", namespace, workers=0)["spec"],
        },
    }  # fmt: skip


def _token_cluster(name: str, namespace: str, secret: str) -> Object:
    return raycluster(name, namespace, workers=0,
                      authOptions={"mode": "token", "secretName": secret})  # fmt: skip


def _cron(name: str, namespace: str, selected: str) -> Object:
    return {
        "apiVersion": "ray.io/v1", "kind": "RayCronJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"schedule": "* * * * *", "suspend": True,
                 "jobTemplate": _job("t", namespace, selected)["spec"]},
    }  # fmt: skip


REFUSED = {
    "rayjob-cluster-selector": (_job, "spec.clusterSelector.[ray.io/cluster]"),
    "raycronjob-cluster-selector": (_cron, "spec.jobTemplate.clusterSelector.[ray.io/cluster]"),
    "rayservice-serve-service": (_service, "spec.serveService.metadata.name"),
    "raycluster-auth-secret": (_token_cluster, "spec.authOptions.secretName"),
}


@pytest.mark.parametrize(("build", "field"), REFUSED.values(), ids=list(REFUSED))
def test_the_crds_refuse_a_name_that_leaves_the_namespace(
    ray_crds: LocalCluster,  # noqa: F811
    namespace: str,
    build: Callable[[str, str, str], Object],
    field: str,
) -> None:
    error = _kubectl_create(ray_crds, build("hostile", namespace, "../../b/rayclusters/x"))
    assert field in error, error
    assert "valid object name" in error or "should match" in error, error
    assert _kubectl_create(ray_crds, build("fine", namespace, "b.x-1")) == ""


# -- with the CRD rules gone, the operator refuses them itself ----------------------


def _without_name_rules(node: Any) -> Any:
    """A CRD schema minus the object-name rules: what an older CRD would accept."""
    if isinstance(node, list):
        return [_without_name_rules(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "pattern" and value == OBJECT_NAME_PATTERN:
            continue
        if key == "maxLength" and node.get("pattern") == OBJECT_NAME_PATTERN:
            continue
        if key == "x-kubernetes-validations":
            value = [rule for rule in value if OBJECT_NAME_PATTERN not in rule["rule"]]
            if not value:
                continue
        out[key] = _without_name_rules(value)
    return out


@pytest.fixture
def lax_crds(ray_crds: LocalCluster, tmp_path: Path) -> Iterator[LocalCluster]:  # noqa: F811
    lax = tmp_path / "lax-crds.json"
    items = [_without_name_rules(crd) for crd in load_bundle()]
    lax.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    ray_crds.apply_crds(lax)
    try:
        yield ray_crds
    finally:
        ray_crds.apply_crds(CRD_DIR)


def _create_when_accepted(kube: KubeClient, manifest: Object) -> None:
    """Create, once the API server serves the lax schema (a CRD update takes a moment)."""
    deadline = time.monotonic() + 30
    while True:
        try:
            kube.create(copy.deepcopy(manifest))
            return
        except Invalid:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def _warned(kube: KubeClient, namespace: str, reason: str, name: str, field: str) -> bool:
    return any(field in str(e.get("note")) for e in events(kube, namespace, reason, name))


def test_the_operator_refuses_hostile_names_and_sends_nothing_to_another_namespace(
    lax_crds: LocalCluster,
    client: KubeClient,  # noqa: F811
    namespace: str,
    victim: str,
    tmp_path: Path,
) -> None:
    hostile_job = _job("job", namespace, f"../../{victim}/rayclusters/x")
    hostile_service = _service("svc", namespace, f"../../{victim}/services/dns")
    hostile_cluster = _token_cluster("c", namespace, f"../../{victim}/secrets/token")
    with FaultProxy(lax_crds, tmp_path) as proxy, OperatorProcess(proxy.kubeconfig, namespace):
        for manifest in (hostile_job, hostile_service, hostile_cluster):
            _create_when_accepted(client, manifest)

        def job_refused() -> bool:
            status = client.get(RAY_JOB, "job", namespace).get("status") or {}
            return status.get("jobDeploymentStatus") == "ValidationFailed"

        # Either outcome ends the wait: refused (now), or a request reached B (before).
        wait_for("the RayJob refused or a request in B",
                 lambda: job_refused() or _reaching(proxy, victim), VALIDATION_WAIT)  # fmt: skip
        assert _reaching(proxy, victim) == []
        status = client.get(RAY_JOB, "job", namespace)["status"]
        assert "spec.clusterSelector[ray.io/cluster]" in status["message"]
        wait_for("the RayService's Warning event", lambda: _warned(
            client, namespace, "InvalidRayServiceSpec", "svc", "spec.serveService.metadata.name"
        ), VALIDATION_WAIT)  # fmt: skip
        wait_for("the RayCluster's Warning event", lambda: _warned(
            client, namespace, "InvalidRayClusterSpec", "c", "spec.authOptions.secretName"
        ), VALIDATION_WAIT)  # fmt: skip
        time.sleep(2.0)  # a pass that would act on the names has had its chance
        assert _reaching(proxy, victim) == []
    dns = client.get(SERVICE, "dns", victim)
    assert dns["spec"]["selector"] == {"app": "dns"}, "B's Service is untouched"


# -- the controller steps that read by these names, with the real client -------------


def test_the_dashboard_token_of_a_hostile_secret_name_is_never_read(
    ray_crds: LocalCluster,  # noqa: F811
    namespace: str,
    victim: str,
    tmp_path: Path,
) -> None:
    cluster = _token_cluster("c", namespace, f"../../{victim}/secrets/token")
    with FaultProxy(ray_crds, tmp_path) as proxy:
        dashboards = Dashboards(DashboardPool(), _proxied_client(proxy))
        try:
            with pytest.raises(InvalidName) as refused:
                dashboards.for_cluster(cluster, "c-head-svc.a.svc.cluster.local:8265")
        finally:
            dashboards.close()
        assert (refused.value.kind, refused.value.field) == ("Secret", "name")
        assert _reaching(proxy, victim) == []
        assert proxy.log == [], "nothing was sent at all"


def test_a_hostile_serve_service_name_is_neither_read_nor_written(
    ray_crds: LocalCluster,  # noqa: F811
    client: KubeClient,  # noqa: F811
    namespace: str,
    victim: str,
    tmp_path: Path,
) -> None:
    desired = {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": f"../../{victim}/services/dns", "namespace": namespace},
        "spec": {"ports": [{"name": "serve", "port": 8000}],
                 "selector": {"ray.io/cluster": "tenant-a-cluster"}},
    }  # fmt: skip
    events_sent: list[str] = []
    with FaultProxy(ray_crds, tmp_path) as proxy:
        tools = SimpleNamespace(
            client=_proxied_client(proxy),
            caches=SimpleNamespace(services=SimpleNamespace(get=lambda _ns, _name: None)),
        )
        run: Any = SimpleNamespace(
            tools=tools, namespace=namespace,
            event=lambda *args: events_sent.append(" ".join(map(str, args))),
        )  # fmt: skip
        with pytest.raises(InvalidName):
            rayservice_switch._reconcile_service(run, desired)
        assert _reaching(proxy, victim) == []
    assert client.get(SERVICE, "dns", victim)["spec"]["selector"] == {"app": "dns"}
    assert client.find(SECRET, "token", victim) is not None
