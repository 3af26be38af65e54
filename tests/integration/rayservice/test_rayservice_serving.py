"""A RayService on a real Ray Serve: it becomes Ready and its application answers."""

from __future__ import annotations

import contextlib
import time

import httpx
import pytest
import yaml

from hack.localcluster import LocalCluster
from hack.localhttp import LOCAL_HTTP
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.kinds import SERVICE
from tests.integration.rayservice.conftest import (
    ClusterHosts,
    ServeHead,
    create_ready,
    operator,
    rayservice,
    serve_config,
)
from tests.waiting import wait_for

ADDRESSING = {"direct": (), "kubernetes-proxy": ("--use-kubernetes-proxy",)}


@pytest.mark.parametrize("addressing", sorted(ADDRESSING))
def test_rayservice_becomes_ready_and_answers(
    ray_crds: LocalCluster,
    kube: KubeClient,
    namespace: str,
    serve_head: ServeHead,
    addressing: str,
) -> None:
    """Directly, the dashboard by the head Service's name and the serve proxy by the
    head pod's IP; with --use-kubernetes-proxy both through the API server (services/
    and pods/ proxy), which dials the kwok pod's IP and so the real head."""
    flags = ADDRESSING[addressing]
    # Through the API server no name needs resolving here: no hosts mapping then.
    hosts = ClusterHosts(kube, namespace) if not flags else contextlib.nullcontext()
    with hosts, operator(ray_crds, namespace, *flags):
        started = time.monotonic()
        status = create_ready(kube, namespace, rayservice("greeter", namespace, serve_head))
        print(f"\nRayService ({addressing}) created -> Ready in {time.monotonic() - started:.1f} s")
        assert status["serviceStatus"] == "Running"
        assert status["numServeEndpoints"] >= 1
        active = status["activeServiceStatus"]
        assert active["applicationStatuses"]["greeter"]["status"] == "RUNNING"
        serve_svc = kube.get(SERVICE, "greeter-serve-svc", namespace)
        assert serve_svc["spec"]["selector"]["ray.io/cluster"] == active["rayClusterName"]
        cluster_ip = serve_svc["spec"]["clusterIP"]
        assert serve_head.answer(cluster_ip) == "hello"


def test_a_head_serving_an_older_config_is_not_ready_until_it_runs_the_new_one(
    ray_crds: LocalCluster,
    kube: KubeClient,
    namespace: str,
    serve_head: ServeHead,
) -> None:
    """The operator reads Serve's statuses, then PUTs the config when its cache lacks
    it. On a head that already runs an application of the same name, that read is of
    the old config: it must not make the RayService Ready. The old config here has its
    own runtime_env, so the new one rebuilds the application: seconds in which the old
    one still answers."""
    stale = yaml.safe_load(serve_config(serve_head, message="stale"))
    stale["applications"][0]["runtime_env"] = {"env_vars": {"GREETER_GENERATION": "stale"}}
    dashboard = f"http://127.0.0.1:{serve_head.dashboard_port}"
    LOCAL_HTTP.put(
        f"{dashboard}/api/serve/applications/", json=stale, timeout=30
    ).raise_for_status()
    wait_for("the stale config to answer", lambda: _answers(serve_head, "stale"), timeout=120)

    with ClusterHosts(kube, namespace), operator(ray_crds, namespace):
        status = create_ready(kube, namespace, rayservice("greeter", namespace, serve_head))
        active = status["activeServiceStatus"]
        assert active["applicationStatuses"]["greeter"]["status"] == "RUNNING"
        cluster_ip = kube.get(SERVICE, "greeter-serve-svc", namespace)["spec"]["clusterIP"]
        assert serve_head.answer(cluster_ip) == "hello"


def _answers(head: ServeHead, text: str) -> bool:
    try:
        return head.answer() == text
    except httpx.HTTPError:
        return False
