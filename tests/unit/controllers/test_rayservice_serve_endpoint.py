"""The Services of a RayService move to its pending cluster only once a pod of that
cluster would be a ready endpoint of ``<s>-serve-svc`` (``serve.has_serve_endpoint``):
a pod labelled ``ray.io/serve=true`` and Ready, not being deleted. KubeRay moves them
when the apps are RUNNING, and calls are refused until a pod qualifies. The whole path,
under a client's calls, is tests/node/test_rayservice_under_traffic.py."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from operator_runtime.controllers.rayservice import serve
from operator_runtime.controllers.rayservice.controller import RayServiceController
from operator_runtime.runtime.kinds import Object
from tests.unit.controllers.test_rayservice_first_pass import rayservice
from tests.unit.controllers.versioned import VersionedServer, context_on

CLUSTER: Object = {"metadata": {"name": "s-abcde", "namespace": "ns", "uid": "cluster-uid"}}


def pod(name: str, *, serve_label: str, ready: bool, deleting: bool = False) -> Object:
    metadata: dict[str, Any] = {
        "name": name, "namespace": "ns", "uid": f"{name}-uid",
        "labels": {"ray.io/cluster": "s-abcde", "ray.io/serve": serve_label},
        "ownerReferences": [{"uid": "cluster-uid", "kind": "RayCluster", "name": "s-abcde"}],
    }  # fmt: skip
    if deleting:
        metadata["deletionTimestamp"] = "2026-11-29T00:00:00Z"
    status = "True" if ready else "False"
    return {"metadata": metadata, "status": {"conditions": [{"type": "Ready", "status": status}]}}


def run_with(*pods: Object) -> Any:
    tools = RayServiceController(context_on(VersionedServer(rayservice()))).tools
    for each in pods:
        tools.caches.pods.upsert(each)
    return SimpleNamespace(tools=tools)


def test_no_pod_to_serve_from_until_a_labelled_one_is_ready() -> None:
    head = pod("head", serve_label="false", ready=True)
    starting = pod("worker", serve_label="true", ready=False)
    assert not serve.has_serve_endpoint(run_with(head, starting), CLUSTER)
    ready = pod("worker", serve_label="true", ready=True)
    assert serve.has_serve_endpoint(run_with(head, ready), CLUSTER)


def test_a_pod_being_deleted_or_of_another_cluster_does_not_count() -> None:
    going = pod("worker", serve_label="true", ready=True, deleting=True)
    assert not serve.has_serve_endpoint(run_with(going), CLUSTER)
    other = pod("elsewhere", serve_label="true", ready=True)
    other["metadata"]["ownerReferences"][0]["uid"] = "another-uid"
    assert not serve.has_serve_endpoint(run_with(other), CLUSTER)
