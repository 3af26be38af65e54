"""A RayService on a real Ray Serve: it becomes Ready and its application answers."""

from __future__ import annotations

import contextlib
import time

import pytest

from hack.localcluster import LocalCluster
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.kinds import SERVICE
from tests.integration.rayservice.conftest import (
    ClusterHosts,
    ServeHead,
    operator,
    rayservice,
    ready,
    wait_for,
)

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
    with hosts, operator(ray_crds, namespace, *flags) as running:
        started = time.monotonic()
        kube.create(rayservice("greeter", namespace, serve_head))
        try:
            status = wait_for("Ready", ready(kube, namespace, "greeter"), timeout=180)
        except AssertionError:
            print(running.tail(80))
            raise
        print(f"\nRayService ({addressing}) created -> Ready in {time.monotonic() - started:.1f} s")
        assert status["serviceStatus"] == "Running"
        assert status["numServeEndpoints"] >= 1
        active = status["activeServiceStatus"]
        assert active["applicationStatuses"]["greeter"]["status"] == "RUNNING"
        serve_svc = kube.get(SERVICE, "greeter-serve-svc", namespace)
        assert serve_svc["spec"]["selector"]["ray.io/cluster"] == active["rayClusterName"]
        cluster_ip = serve_svc["spec"]["clusterIP"]
        assert serve_head.answer(cluster_ip) == "hello"
