"""Blue/green upgrades of a RayService on a real Ray Serve (not incremental).

- A serve config change is applied in place: one more serve PUT, no new cluster.
- A cluster spec change gets a new cluster; the Services switch to it once it serves,
  and the old one goes ``rayClusterDeletionDelaySeconds`` later. The app answers
  through the serve Service's ClusterIP all along.
- The deletion delay survives an operator restart: the due time is on the old cluster
  (``pulumi-ray.io/delete-after``), where KubeRay keeps it in memory only.
"""

from __future__ import annotations

import copy
import datetime
import threading
import time
from typing import Any

import httpx

from hack.localcluster import LocalCluster
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.errors import NotFound
from operator_runtime.runtime.kinds import ENDPOINT_SLICE, EVENT, RAY_CLUSTER, RAY_SERVICE, SERVICE
from tests.integration.rayservice.conftest import (
    ClusterHosts,
    ServeHead,
    active_cluster,
    add_head_env,
    condition,
    operator,
    rayservice,
    ready,
    serve_config,
    service_status,
    start_ready,
)
from tests.waiting import wait_for

DELETE_AFTER = "pulumi-ray.io/delete-after"


class ClusterWatch:
    """Every RayCluster seen in the namespace (polled every 0.2 s), by name."""

    def __init__(self, kube: KubeClient, namespace: str) -> None:
        self._kube, self._namespace = kube, namespace
        self.seen: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> ClusterWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            for cluster in self._kube.list(RAY_CLUSTER, self._namespace)["items"]:
                self.seen.add(cluster["metadata"]["name"])


class Prober:
    """Every 0.25 s: GETs the app through the serve Service's ClusterIP, counts the ready
    endpoints behind the serve Service, and reads the RayService's Ready condition. The
    ClusterIP reaches the one real head whichever cluster is selected, so the endpoints
    and Ready are what show a switch that leaves the Service with nothing behind it."""

    def __init__(self, head: ServeHead, kube: KubeClient, namespace: str, name: str) -> None:
        self._head, self._kube, self._namespace, self._name = head, kube, namespace, name
        self._host = serve_service(kube, namespace, name)["spec"]["clusterIP"]
        self.answers: dict[str, int] = {}
        self.failures: list[str] = []
        self.endpoints: list[int] = []
        self.not_ready: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Prober:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.wait(0.25):
            try:
                answer = self._head.answer(self._host)
            except httpx.HTTPError as exc:
                self.failures.append(f"{time.monotonic():.1f}: {exc!r}")
            else:
                self.answers[answer] = self.answers.get(answer, 0) + 1
            self.endpoints.append(ready_endpoints(self._kube, self._namespace, self._name))
            ready_now = condition(service_status(self._kube, self._namespace, self._name), "Ready")
            if ready_now.get("status") != "True":
                self.not_ready.append(f"{time.monotonic():.1f}: {ready_now}")


def ready_endpoints(kube: KubeClient, namespace: str, name: str) -> int:
    """Ready pods behind ``<name>-serve-svc``, from its EndpointSlices."""
    selector = f"kubernetes.io/service-name={name}-serve-svc"
    slices = kube.list(ENDPOINT_SLICE, namespace, label_selector=selector)["items"]
    return len(
        {
            (endpoint.get("targetRef") or {}).get("uid")
            for found in slices
            for endpoint in found.get("endpoints") or ()
            if (endpoint.get("conditions") or {}).get("ready")
        }
    )


def event_counts(kube: KubeClient, namespace: str, name: str) -> dict[str, int]:
    """Events on the RayService by reason, repeats included."""
    counts: dict[str, int] = {}
    for event in kube.list(EVENT, namespace)["items"]:
        if (event.get("regarding") or {}).get("name") != name:
            continue
        reason = str(event.get("reason"))
        counts[reason] = counts.get(reason, 0) + int((event.get("series") or {}).get("count") or 1)
    return counts


def serve_puts(kube: KubeClient, namespace: str, name: str) -> int:
    """UpdatedServeApplications Events on the RayService, repeats included (the series
    count is written by the operator when it stops, at the latest)."""
    return event_counts(kube, namespace, name).get("UpdatedServeApplications", 0)


def serve_service(kube: KubeClient, namespace: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = kube.get(SERVICE, f"{name}-serve-svc", namespace)
    return found


def selected(kube: KubeClient, namespace: str, service: str) -> str:
    try:
        found = kube.get(SERVICE, service, namespace)
    except NotFound:
        return ""
    return str(found["spec"]["selector"].get("ray.io/cluster", ""))


def gone(kube: KubeClient, namespace: str, cluster: str) -> Any:
    def check() -> bool:
        try:
            kube.get(RAY_CLUSTER, cluster, namespace)
        except NotFound:
            return True
        return False

    return check


def gone_service(kube: KubeClient, namespace: str, name: str) -> Any:
    def check() -> bool:
        try:
            kube.get(RAY_SERVICE, name, namespace)
        except NotFound:
            return True
        return False

    return check


def test_a_serve_config_change_is_applied_in_place(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str, serve_head: ServeHead
) -> None:
    name = "inplace"
    with (
        ClusterHosts(kube, namespace),
        ClusterWatch(kube, namespace) as clusters,
        operator(ray_crds, namespace),
    ):
        active = start_ready(kube, namespace, rayservice(name, namespace, serve_head))
        cluster_ip = serve_service(kube, namespace, name)["spec"]["clusterIP"]
        assert serve_head.answer(cluster_ip) == "hello"
        kube.patch(
            RAY_SERVICE,
            name,
            namespace,
            {"spec": {"serveConfigV2": serve_config(serve_head, "bonjour")}},
        )
        changed = time.monotonic()
        wait_for("bonjour", lambda: serve_head.answer(cluster_ip) == "bonjour", timeout=60)
        answered_in = time.monotonic() - changed
        time.sleep(10)  # nothing changes now: no PUT may repeat
        status = service_status(kube, namespace, name)
    counts = event_counts(kube, namespace, name)  # the operator has stopped: counts flushed
    puts = counts.get("UpdatedServeApplications", 0)
    print(
        f"\nserveConfigV2 changed -> new answer in {answered_in:.1f} s; serve PUTs: {puts}; "
        f"events {counts}"
    )
    assert clusters.seen == {active}, f"clusters created: {clusters.seen}"
    assert status["activeServiceStatus"]["rayClusterName"] == active
    assert not (status.get("pendingServiceStatus") or {}).get("rayClusterName"), status
    assert status["conditions"], status
    assert puts == 2, f"{puts} serve PUTs: one for the creation, one for the change expected"
    assert counts.get("CreatedRayCluster") == 1, counts
    assert "UpdatedRayCluster" not in counts and "UpdatedService" not in counts, counts
    assert serve_head.answer(cluster_ip) == "bonjour"


def test_a_worker_group_added_at_the_end_updates_the_cluster_in_place(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str, serve_head: ServeHead
) -> None:
    """KubeRay's partial hash: the goal cut to the cluster's worker groups matches, so
    the active cluster is updated in place; no new cluster, no switch."""
    name = "grow"
    with (
        ClusterHosts(kube, namespace),
        ClusterWatch(kube, namespace) as clusters,
        operator(ray_crds, namespace),
    ):
        active = start_ready(kube, namespace, rayservice(name, namespace, serve_head))
        before = kube.get(RAY_CLUSTER, active, namespace)
        with Prober(serve_head, kube, namespace, name) as probe:
            found = kube.get(RAY_SERVICE, name, namespace)
            groups = found["spec"]["rayClusterConfig"]["workerGroupSpecs"]
            extra = copy.deepcopy(groups[0])
            extra.update(groupName="extra", replicas=0, minReplicas=0, maxReplicas=1)
            groups.append(extra)
            kube.update(found)
            changed = time.monotonic()
            updated = wait_for(
                "the cluster updated in place",
                lambda: (
                    len(kube.get(RAY_CLUSTER, active, namespace)["spec"]["workerGroupSpecs"]) == 2
                    and kube.get(RAY_CLUSTER, active, namespace)
                ),
                timeout=30,
            )
            took = time.monotonic() - changed
            time.sleep(6)  # no new cluster may follow
            status = service_status(kube, namespace, name)
            after = kube.get(RAY_CLUSTER, active, namespace)
    counts = event_counts(kube, namespace, name)
    print(f"\nworker group added -> active cluster updated in place in {took:.1f} s; {counts}")
    hash_key = "ray.io/hash-without-replicas-and-workers-to-delete"
    assert clusters.seen == {active}, clusters.seen
    assert (
        updated["metadata"]["annotations"][hash_key] != before["metadata"]["annotations"][hash_key]
    )
    assert after["metadata"]["annotations"]["ray.io/num-worker-groups"] == "2"
    assert after["metadata"]["generation"] == updated["metadata"]["generation"], "updated again"
    assert counts.get("UpdatedRayCluster") == 1, counts
    assert status["activeServiceStatus"]["rayClusterName"] == active
    assert not (status.get("pendingServiceStatus") or {}).get("rayClusterName"), status
    assert probe.failures == [] and probe.not_ready == [], (probe.failures, probe.not_ready)


def test_a_cluster_spec_change_switches_to_a_new_cluster(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str, serve_head: ServeHead
) -> None:
    name = "bluegreen"
    manifest = rayservice(name, namespace, serve_head, rayClusterDeletionDelaySeconds=3)
    with (
        ClusterHosts(kube, namespace),
        ClusterWatch(kube, namespace) as clusters,
        operator(ray_crds, namespace),
    ):
        old = start_ready(kube, namespace, manifest)
        with Prober(serve_head, kube, namespace, name) as probe:
            add_head_env(kube, namespace, name, "1")
            changed = time.monotonic()
            pending = wait_for(
                "a pending cluster",
                lambda: (
                    service_status(kube, namespace, name).get("pendingServiceStatus") or {}
                ).get("rayClusterName"),
                timeout=30,
            )
            pending_at = time.monotonic() - changed
            wait_for(
                "the Services on the new cluster",
                lambda: (
                    selected(kube, namespace, f"{name}-serve-svc") == pending
                    and selected(kube, namespace, f"{name}-head-svc") == pending
                ),
                timeout=120,
                interval=0.05,
            )
            switched_at = time.monotonic() - changed
            promoted = wait_for(
                "promotion",
                lambda: active_cluster(kube, namespace, name) == pending,
                timeout=30,
            )
            stamped = wait_for(
                "the old cluster stamped",
                lambda: (
                    kube.get(RAY_CLUSTER, old, namespace)["metadata"].get("annotations") or {}
                ).get(DELETE_AFTER),
                timeout=30,
                interval=0.05,
            )
            wait_for("the old cluster deleted", gone(kube, namespace, old), timeout=30)
            deleted_at = time.monotonic() - changed
            deleted_wall = datetime.datetime.now(datetime.UTC)
            wait_for("Ready", ready(kube, namespace, name), timeout=30)
            time.sleep(1)
        status = service_status(kube, namespace, name)
        # Deleting the RayService deletes its cluster at once (no delay), then the
        # finalizer goes.
        kube.delete(RAY_SERVICE, name, namespace)
        deleting = time.monotonic()
        wait_for("the RayService gone", gone_service(kube, namespace, name), timeout=30)
        service_gone_in = time.monotonic() - deleting
        left = [c["metadata"]["name"] for c in kube.list(RAY_CLUSTER, namespace)["items"]]
    counts = event_counts(kube, namespace, name)
    print(
        f"\ncluster spec changed -> pending {pending} named in {pending_at:.1f} s, "
        f"Services switched in {switched_at:.1f} s, old cluster {old} deleted in "
        f"{deleted_at:.1f} s (delay 3 s, stamped {stamped}); probes {probe.answers}, "
        f"failures {len(probe.failures)}, serve endpoints min {min(probe.endpoints)} "
        f"max {max(probe.endpoints)}, Ready not True {len(probe.not_ready)}x; events {counts}; "
        f"RayService deleted -> gone in {service_gone_in:.1f} s"
    )
    assert promoted
    assert clusters.seen == {old, pending}, clusters.seen
    # The delay runs from the moment the old cluster stopped being active (its stamp,
    # whole seconds), not from when this test's polling saw the switch.
    due = datetime.datetime.fromisoformat(str(stamped).replace("Z", "+00:00"))
    assert deleted_wall >= due - datetime.timedelta(seconds=1), "deleted before its due time"
    assert deleted_at - switched_at < 15, "the deletion delay was not kept"
    assert status["activeServiceStatus"]["rayClusterName"] == pending
    assert not (status.get("pendingServiceStatus") or {}).get("rayClusterName"), status
    assert probe.failures == [], probe.failures
    assert set(probe.answers) == {"hello"}, probe.answers
    assert min(probe.endpoints) >= 1, "the serve Service had no ready endpoint"
    assert probe.not_ready == [], probe.not_ready
    # The old cluster after the switch, the new one with the RayService.
    assert counts.get("CreatedRayCluster") == 2 and counts.get("DeletedRayCluster") == 2, counts
    assert service_gone_in < 15, service_gone_in
    assert left == [], left


def test_the_deletion_delay_survives_an_operator_restart(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str, serve_head: ServeHead
) -> None:
    name = "restart"
    delay = 20
    manifest = rayservice(name, namespace, serve_head, rayClusterDeletionDelaySeconds=delay)
    with ClusterHosts(kube, namespace):
        with operator(ray_crds, namespace):
            old = start_ready(kube, namespace, manifest)
            add_head_env(kube, namespace, name, "1")
            new = wait_for(
                "promotion",
                lambda: (active := active_cluster(kube, namespace, name)) != old and active,
                timeout=120,
            )
            switched = datetime.datetime.now(datetime.UTC)
            stamped = wait_for(
                "the old cluster stamped",
                lambda: (
                    kube.get(RAY_CLUSTER, old, namespace)["metadata"].get("annotations") or {}
                ).get(DELETE_AFTER),
                timeout=30,
            )
        # The first operator is gone (SIGTERM); with it, what KubeRay keeps in memory.
        due = datetime.datetime.fromisoformat(stamped.replace("Z", "+00:00"))
        ahead = (due - switched).total_seconds()
        assert kube.get(RAY_CLUSTER, old, namespace), "deleted before the restart"
        wait = (due - datetime.datetime.now(datetime.UTC)).total_seconds() + 1
        time.sleep(max(0.0, wait))
        assert not gone(kube, namespace, old)(), "deleted with no operator running"
        with operator(ray_crds, namespace) as restarted_operator:
            restarted = restarted_operator.wait_started()
            wait_for("the old cluster deleted", gone(kube, namespace, old), timeout=delay)
            after_restart = time.monotonic() - restarted
            status = service_status(kube, namespace, name)
    print(
        f"\nold cluster {old} stamped due {stamped} ({ahead:.1f} s after the switch seen); "
        f"deleted {after_restart:.1f} s after the new operator's controllers started (KubeRay: "
        f"{delay} s after it, the timer restarting from zero)"
    )
    assert delay - 5 <= ahead <= delay + 5, ahead
    # KubeRay's in-memory timer starts again at the restart: deleted `delay` s after it.
    # Ours is on the object and already due: deleted as soon as the operator has synced
    # (a few seconds; more on a loaded machine), well before the timer would.
    assert after_restart < delay - 2, after_restart
    assert status["activeServiceStatus"]["rayClusterName"] == new
