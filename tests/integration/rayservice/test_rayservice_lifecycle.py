"""A RayService's life beyond upgrades, on a real Ray Serve: suspend and resume (with
the ``kuberay_service_*`` metrics scraped on the way), cluster spec changes that must
change nothing (``upgradeStrategy.type: None``, ``ENABLE_ZERO_DOWNTIME=false``), and a
cluster that never gets ready (``ray.io/initializing-timeout``)."""

from __future__ import annotations

import re
import time
from typing import Any

from hack.localcluster import LocalCluster
from hack.localcluster.cluster import free_port
from hack.localhttp import LOCAL_HTTP
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.kinds import RAY_CLUSTER, RAY_SERVICE, SERVICE
from tests.integration.raycluster.conftest import events
from tests.integration.rayservice.conftest import (
    ClusterHosts,
    ServeHead,
    add_head_env,
    condition,
    operator,
    rayservice,
    ready,
    service_status,
    start_ready,
)
from tests.waiting import wait_for


def owned_services(kube: KubeClient, namespace: str, name: str) -> list[str]:
    return [
        service["metadata"]["name"]
        for service in kube.list(SERVICE, namespace)["items"]
        if (service["metadata"].get("labels") or {}).get("ray.io/originated-from-cr-name") == name
    ]


def cluster_names(kube: KubeClient, namespace: str) -> list[str]:
    return sorted(c["metadata"]["name"] for c in kube.list(RAY_CLUSTER, namespace)["items"])


def samples(port: int, metric: str) -> list[str]:
    text = LOCAL_HTTP.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    return [line for line in text.splitlines() if re.match(rf"{metric}\{{", line)]


def test_suspend_deletes_everything_and_resume_serves_again(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str, serve_head: ServeHead
) -> None:
    name = "sleepy"
    port = free_port()
    with (
        ClusterHosts(kube, namespace),
        operator(ray_crds, namespace, "--enable-metrics", f"--metrics-addr=127.0.0.1:{port}"),
    ):
        first = start_ready(kube, namespace, rayservice(name, namespace, serve_head))
        info = samples(port, "kuberay_service_info")
        ready_series = samples(port, "kuberay_service_condition_ready")
        kube.patch(RAY_SERVICE, name, namespace, {"spec": {"suspend": True}})
        suspended_at = time.monotonic()
        seen: list[tuple[str, str, str]] = []

        def suspended() -> dict[str, Any] | None:
            status = service_status(kube, namespace, name)
            for type_ in ("Suspending", "Suspended"):
                found = condition(status, type_)
                step = (type_, found.get("status", ""), found.get("reason", ""))
                if found and (not seen or seen[-1] != step) and step[1] == "True":
                    seen.append(step)
            return status if condition(status, "Suspended").get("status") == "True" else None

        status = wait_for("Suspended", suspended, timeout=60, interval=0.05)
        took = time.monotonic() - suspended_at
        left = cluster_names(kube, namespace), owned_services(kube, namespace, name)
        suspended_series = samples(port, "kuberay_service_condition_ready")
        kube.patch(RAY_SERVICE, name, namespace, {"spec": {"suspend": False}})
        resumed_at = time.monotonic()
        back = wait_for("Ready again", ready(kube, namespace, name), timeout=120)
        resumed = time.monotonic() - resumed_at
        cluster_ip = kube.get(SERVICE, f"{name}-serve-svc", namespace)["spec"]["clusterIP"]
        answer = serve_head.answer(cluster_ip)
    print(
        f"\nsuspend -> Suspended in {took:.1f} s (seen {seen}); resume -> Ready in "
        f"{resumed:.1f} s on {back['activeServiceStatus']['rayClusterName']}\n"
        + "\n".join(info + ready_series + suspended_series)
    )
    assert ("Suspending", "True", "SuspendRequested") in seen, seen
    assert condition(status, "Suspending")["status"] == "False"
    assert condition(status, "Ready")["reason"] == "SuspendComplete"
    assert "activeServiceStatus" not in status and status.get("numServeEndpoints") == 0
    assert left == ([], []), f"left after the suspend: {left}"
    assert back["activeServiceStatus"]["rayClusterName"] != first
    assert condition(back, "Suspended")["reason"] == "RayServiceResumed"
    assert answer == "hello"
    labels = f'name="{name}",namespace="{namespace}"'
    assert any(labels in line and line.endswith(" 1.0") for line in info), info
    assert any(labels in line and 'condition="true"' in line for line in ready_series), ready_series
    assert any(labels in line and 'condition="false"' in line for line in suspended_series), (
        suspended_series
    )


def unchanged(kube: KubeClient, namespace: str, name: str, cluster: str) -> dict[str, Any]:
    """What a cluster spec change must leave alone, after it has been given time."""
    time.sleep(8)
    found = kube.get(RAY_CLUSTER, cluster, namespace)
    return {
        "clusters": cluster_names(kube, namespace),
        "generation": found["metadata"]["generation"],
        "env": found["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0].get("env"),
        "pending": (service_status(kube, namespace, name).get("pendingServiceStatus") or {}).get(
            "rayClusterName"
        ),
    }


def test_no_upgrade_when_the_strategy_is_none_or_zero_downtime_is_off(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str, serve_head: ServeHead
) -> None:
    none = rayservice("none", namespace, serve_head, upgradeStrategy={"type": "None"})
    plain = rayservice("plain", namespace, serve_head)
    with ClusterHosts(kube, namespace):
        with operator(ray_crds, namespace):
            cluster = start_ready(kube, namespace, none)
            generation = kube.get(RAY_CLUSTER, cluster, namespace)["metadata"]["generation"]
            add_head_env(kube, namespace, "none", "1")
            after_none = unchanged(kube, namespace, "none", cluster)
            status_none = service_status(kube, namespace, "none")
        with operator(ray_crds, namespace, env={"ENABLE_ZERO_DOWNTIME": "false"}):
            other = start_ready(kube, namespace, plain)
            other_generation = kube.get(RAY_CLUSTER, other, namespace)["metadata"]["generation"]
            add_head_env(kube, namespace, "plain", "1")
            after_plain = unchanged(kube, namespace, "plain", other)
            status_plain = service_status(kube, namespace, "plain")
    print(f"\ntype None: {after_none}\nENABLE_ZERO_DOWNTIME=false: {after_plain}")
    for after, mine, gen, status in (
        (after_none, cluster, generation, status_none),
        (after_plain, other, other_generation, status_plain),
    ):
        assert mine in after["clusters"] and len(after["clusters"]) <= 2, after
        assert after["generation"] == gen and after["env"] is None, "updated in place"
        assert after["pending"] is None, after
        assert status["activeServiceStatus"]["rayClusterName"] == mine
        assert condition(status, "Ready")["status"] == "True"
    assert sorted(after_plain["clusters"]) == sorted([cluster, other]), after_plain


def test_a_cluster_that_never_gets_ready_times_out_and_is_deleted(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str, serve_head: ServeHead
) -> None:
    name = "stuck"
    manifest = rayservice(name, namespace, serve_head, rayClusterDeletionDelaySeconds=0)
    manifest["metadata"]["annotations"] = {"ray.io/initializing-timeout": "5s"}
    head = manifest["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]
    head["nodeSelector"] = {"pulumi-ray.io/no-such-node": "true"}
    with operator(ray_crds, namespace):
        kube.create(manifest)
        created = time.monotonic()
        cluster = wait_for("a cluster", lambda: cluster_names(kube, namespace), timeout=30)

        def timed_out() -> dict[str, Any] | None:
            status = service_status(kube, namespace, name)
            return (
                status
                if condition(status, "Ready").get("reason") == "InitializingTimeout"
                else None
            )

        status = wait_for("InitializingTimeout", timed_out, timeout=60)
        took = time.monotonic() - created
        warned = wait_for(
            "the Warning", lambda: events(kube, namespace, "RayServiceInitializingTimeout", name)
        )
        wait_for("the cluster deleted", lambda: not cluster_names(kube, namespace), timeout=30)
        deleted = time.monotonic() - created
        time.sleep(3)  # terminal: nothing new is created
        after = cluster_names(kube, namespace), service_status(kube, namespace, name)
        # Terminal even when the spec is mended afterwards (KubeRay's e2e checks the same):
        # a longer timeout and a head that could be placed make no new cluster.
        kube.patch(RAY_SERVICE, name, namespace, [
            {"op": "replace", "path": "/metadata/annotations/ray.io~1initializing-timeout",
             "value": "10m"},
            {"op": "remove", "path": "/spec/rayClusterConfig/headGroupSpec/template/spec/"
                                     "nodeSelector"},
        ], patch_type="json")  # fmt: skip
        time.sleep(3)
        mended = cluster_names(kube, namespace), service_status(kube, namespace, name)
    print(
        f"\ncreated -> InitializingTimeout in {took:.1f} s, cluster {cluster} deleted in "
        f"{deleted:.1f} s; {condition(status, 'Ready')['message']}"
    )
    assert condition(status, "Ready")["status"] == "False"
    assert [e["type"] for e in warned] == ["Warning"], warned
    # The clock starts at the Initializing condition's lastTransitionTime, written in
    # whole seconds (truncated): up to 1 s before ``created``.
    # Bounded by the 60 s wait above; 45 s still tells a 5 s timeout from any default.
    assert 4 <= took < 45, took
    assert after[0] == [], after
    assert condition(after[1], "Ready")["reason"] == "InitializingTimeout"
    assert not (after[1].get("activeServiceStatus") or {}).get("rayClusterName")
    assert not (after[1].get("pendingServiceStatus") or {}).get("rayClusterName")
    assert mended[0] == [], mended
    assert condition(mended[1], "Ready")["reason"] == "InitializingTimeout", mended[1]


def test_a_suspend_cancelled_midway_completes_then_resumes(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str, serve_head: ServeHead
) -> None:
    """Once Suspending is written the suspend runs to its end even if ``suspend`` goes
    back to false; the pass that reaches Suspended must come back to see the spec, as
    nothing else wakes the controller (its own status write does not)."""
    name = "fickle"
    with ClusterHosts(kube, namespace), operator(ray_crds, namespace):
        first = start_ready(kube, namespace, rayservice(name, namespace, serve_head))
        kube.patch(RAY_SERVICE, name, namespace, {"spec": {"suspend": True}})
        wait_for(
            "Suspending",
            lambda: (
                condition(service_status(kube, namespace, name), "Suspending").get("status")
                == "True"
            ),
            timeout=30,
            interval=0.02,
        )
        kube.patch(RAY_SERVICE, name, namespace, {"spec": {"suspend": False}})
        cancelled = time.monotonic()
        is_ready = ready(kube, namespace, name)
        # Ready on a new active cluster. A fresh-clone run once saw Ready with no
        # activeServiceStatus 1.0 s after the cancel (Ready follows the serve endpoints,
        # which the old head's pod may still hold while it goes away); that transient is a
        # finding to chase, not what this test is about.
        back = wait_for(
            "Ready again on an active cluster",
            lambda: (status := is_ready()) and "activeServiceStatus" in status and status,
            timeout=60,
        )
        took = time.monotonic() - cancelled
    print(f"\nsuspend cancelled midway -> Ready again in {took:.1f} s")
    assert back["activeServiceStatus"]["rayClusterName"] != first, "the suspend did not complete"
    assert condition(back, "Suspended")["reason"] == "RayServiceResumed"
    assert condition(back, "Suspending")["reason"] == "SuspendComplete"
