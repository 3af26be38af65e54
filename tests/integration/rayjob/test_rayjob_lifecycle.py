"""The RayJob's lifecycle on the real control plane and a real Ray head (HTTPMode: the
operator submits to the head itself, no submitter pod): deadlines, retries on a new
cluster each, suspend and resume, deletion of a running RayJob, and an existing
cluster chosen by ``clusterSelector``.

What happens on the head is read from the head (the dashboard's Jobs API), what
happens to RayClusters from a watch of this test's own, never from the operator's log.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from hack.localcluster import LocalCluster
from hack.localcluster.cluster import free_port
from hack.localhttp import LOCAL_HTTP
from operator_runtime.clients import DashboardError, DashboardPool, direct_endpoint
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.errors import NotFound
from operator_runtime.runtime.kinds import RAY_CLUSTER, RAY_JOB
from tests.integration.raycluster.conftest import events, raycluster, settle
from tests.integration.rayjob.conftest import (
    ClusterHosts,
    describe_job,
    job_status,
    operator,
    rayjob,
    reaches,
)
from tests.rayhead import RayHead
from tests.waiting import wait_for
from tests.watching import Recorder

SLEEP_600 = 'python -c "import time; time.sleep(600)"'
EXIT_1 = 'python -c "import sys; sys.exit(1)"'
FINAL = ("Complete", "Failed")
JOB_SECONDS = 240
"""A short job on the kept Ray head, from the RayJob's submission to Complete: Ray
starts the job's supervisor actor and the entrypoint's interpreter, seconds of CPU each,
which on a loaded CI machine took more than the 90 s these waits had."""


# -- helpers ----------------------------------------------------------------------------


class ClusterWatch:
    """Every RayCluster created and deleted in a namespace, from a watch of its own."""

    def __init__(self, kube: KubeClient, namespace: str) -> None:
        self._kube, self._namespace = kube, namespace
        self.added: list[str] = []
        self.deleted: list[str] = []
        self._stop = threading.Event()
        self._stream: Any = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> ClusterWatch:
        listed = self._kube.list(RAY_CLUSTER, self._namespace)
        self.added = [c["metadata"]["name"] for c in listed["items"]]
        self._version = str(listed["metadata"]["resourceVersion"])
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        if self._stream is not None:
            self._stream.close()
        self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._stream = self._kube.watch(
                    RAY_CLUSTER, self._namespace, resource_version=self._version,
                    inactivity_timeout=5,
                )  # fmt: skip
                for event in self._stream:
                    obj = event["object"]
                    self._version = str(obj["metadata"].get("resourceVersion", self._version))
                    name = str(obj["metadata"].get("name", ""))
                    if event["type"] == "ADDED":
                        self.added.append(name)
                    elif event["type"] == "DELETED":
                        self.deleted.append(name)
            except Exception:  # a broken stream reconnects from the last version
                if self._stop.wait(0.2):
                    return


def ray_job(head: RayHead, job_id: str) -> str:
    """The Ray job's status as the head reports it."""
    with DashboardPool() as pool:
        client = pool.dashboard(direct_endpoint(f"127.0.0.1:{head.dashboard_port}"))
        return str(client.job_info(job_id).status.value)


def stop_on_head(head: RayHead, *job_ids: str) -> None:
    """Cleanup: the head is shared by the module; no sleeping job may outlive its test."""
    with DashboardPool() as pool:
        client = pool.dashboard(direct_endpoint(f"127.0.0.1:{head.dashboard_port}"))
        for job_id in job_ids:
            with suppress(DashboardError):
                client.stop_job(job_id)


def cluster_gone(kube: KubeClient, namespace: str, name: str) -> bool:
    try:
        kube.get(RAY_CLUSTER, name, namespace)
    except NotFound:
        return True
    return False


def job_gone(kube: KubeClient, namespace: str, name: str) -> bool:
    try:
        kube.get(RAY_JOB, name, namespace)
    except NotFound:
        return True
    return False


@contextmanager
def running(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str, *flags: str
) -> Iterator[ClusterWatch]:
    with (
        ClusterHosts(kube, namespace),
        ClusterWatch(kube, namespace) as clusters,
        operator(ray_crds, namespace, *flags),
    ):
        yield clusters


def job_running_on_head(kube: KubeClient, namespace: str, name: str) -> Any:
    def check() -> dict[str, Any] | None:
        status = job_status(kube, namespace, name)
        running_now = status.get("jobDeploymentStatus") == "Running"
        return status if running_now and status.get("jobStatus") == "RUNNING" else None

    return check


class DeploymentStates(Recorder):
    """Every jobDeploymentStatus one RayJob passes through, in order (a watch's)."""

    def __init__(self, kube: KubeClient, namespace: str, name: str) -> None:
        super().__init__(kube, RAY_JOB, namespace, field_selector=f"metadata.name={name}")

    @property
    def states(self) -> list[str]:
        states: list[str] = []
        for event in list(self.events):
            state = str((event.object.get("status") or {}).get("jobDeploymentStatus") or "")
            if not states or states[-1] != state:
                states.append(state)
        return states

    def reached(self, state: str) -> list[str] | None:
        """A condition for ``wait_for``: the states so far, once ``state`` was seen."""
        states = self.states
        return states if state in states else None


def scrape(port: int) -> dict[str, list[tuple[dict[str, str], float]]]:
    text = LOCAL_HTTP.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    found: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return found


# -- 1. activeDeadlineSeconds -----------------------------------------------------------


def test_active_deadline_fails_without_retry_and_leaves_the_ray_job_running(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str, ray_head: RayHead
) -> None:
    manifest = rayjob(
        "deadline", namespace, ray_head, submissionMode="HTTPMode", entrypoint=SLEEP_600,
        activeDeadlineSeconds=5, backoffLimit=2, shutdownAfterJobFinishes=True,
    )  # fmt: skip
    job_id = ""
    with (
        running(ray_crds, kube, namespace) as clusters,
        DeploymentStates(kube, namespace, "deadline") as watched,
    ):
        try:
            started = time.monotonic()
            kube.create(manifest)
            status = wait_for("Failed", reaches(kube, namespace, "deadline", *FINAL), 30, 0.05)
            failed_after = time.monotonic() - started
            states = wait_for("the watch at Failed", lambda: watched.reached("Failed"), 10)
            job_id, cluster = status["jobId"], status["rayClusterName"]
            assert status["jobDeploymentStatus"] == "Failed", status
            assert status["reason"] == "DeadlineExceeded"
            assert "ActiveDeadlineSeconds: 5" in status["message"], status
            # shutdownAfterJobFinishes (TTL 0): the cluster goes.
            wait_for("the cluster deleted", lambda: cluster_gone(kube, namespace, cluster), 30)
            settle(4)  # a retry would show by now (requeue 3 s)
            final = job_status(kube, namespace, "deadline")
            # KubeRay does not stop the Ray job on the deadline: the head goes on with it.
            on_head = wait_for(
                "the Ray job running on", lambda: ray_job(ray_head, job_id) == "RUNNING", 30
            )
        finally:
            if job_id:
                stop_on_head(ray_head, job_id)
    print(f"\nactiveDeadlineSeconds 5: created -> Failed/DeadlineExceeded in {failed_after:.1f} s "
          f"(states {states})")  # fmt: skip
    assert "Running" in states, states
    assert final["jobDeploymentStatus"] == "Failed" and final["failed"] == 1, final
    assert final["rayClusterName"] == cluster and final["jobId"] == job_id
    assert clusters.added == [cluster], clusters.added
    assert on_head


# -- 2. preRunningDeadlineSeconds -------------------------------------------------------


def test_pre_running_deadline_fails_a_cluster_that_never_gets_ready(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str, ray_head: RayHead
) -> None:
    manifest = rayjob(
        "pre-deadline", namespace, ray_head, submissionMode="HTTPMode",
        preRunningDeadlineSeconds=3,
    )  # fmt: skip
    head_spec = manifest["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
    head_spec["nodeSelector"] = {"pulumi-ray.test/no-such-node": "true"}
    with running(ray_crds, kube, namespace) as clusters:
        started = time.monotonic()
        kube.create(manifest)
        status = wait_for("Failed", reaches(kube, namespace, "pre-deadline", *FINAL), 30)
        elapsed = time.monotonic() - started
        cluster = kube.get(RAY_CLUSTER, status["rayClusterName"], namespace)
    print(f"\npreRunningDeadlineSeconds 3: created -> Failed in {elapsed:.1f} s")
    assert status["jobDeploymentStatus"] == "Failed", status
    assert status["reason"] == "PreRunningDeadlineExceeded"
    assert status["failed"] == 1
    assert not status.get("dashboardURL") and status.get("jobStatus") in (None, "")
    assert (cluster.get("status") or {}).get("state") != "ready"
    assert clusters.added == [status["rayClusterName"]]


# -- 3. backoffLimit: every attempt on a new cluster --------------------------------------


def test_failed_attempts_retry_on_new_clusters_until_the_backoff_limit(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str, ray_head: RayHead
) -> None:
    manifest = rayjob(
        "retries", namespace, ray_head, submissionMode="HTTPMode", entrypoint=EXIT_1,
        backoffLimit=2,
    )  # fmt: skip
    port = free_port()
    names: list[str] = []
    with running(ray_crds, kube, namespace, f"--metrics-addr=127.0.0.1:{port}") as clusters:
        started = time.monotonic()
        created = kube.create(manifest)

        def final() -> dict[str, Any] | None:
            status = job_status(kube, namespace, "retries")
            name = status.get("rayClusterName")
            if name and name not in names:
                names.append(name)
            return status if status.get("jobDeploymentStatus") in FINAL else None

        status = wait_for("the last attempt to fail", final, timeout=180, interval=0.2)
        elapsed = time.monotonic() - started
        settle(4)  # a fourth attempt would have begun by now
        status = job_status(kube, namespace, "retries")
        metrics = scrape(port)
    print(f"\nbackoffLimit 2: 3 attempts in {elapsed:.1f} s ({elapsed / 3:.1f} s per attempt)")
    assert status["jobDeploymentStatus"] == "Failed", status
    assert status["reason"] == "AppFailed" and status["jobStatus"] == "FAILED"
    assert status["failed"] == 3 and status["succeeded"] == 0
    assert len(set(clusters.added)) == 3 == len(clusters.added), clusters.added
    assert set(names) <= set(clusters.added) and status["rayClusterName"] == clusters.added[-1]
    uid = created["metadata"]["uid"]
    mine = {"name": "retries", "namespace": namespace, "uid": uid}
    assert (mine, 1.0) in metrics["kuberay_job_info"]
    assert ({**mine, "deployment_status": "Failed"}, 1.0) in metrics[
        "kuberay_job_deployment_status"
    ]
    durations = {
        labels["retry_count"]: (labels["job_deployment_status"], seconds)
        for labels, seconds in metrics["kuberay_job_execution_duration_seconds"]
        if labels["uid"] == uid
    }
    assert sorted(durations) == ["0", "1", "2"], durations
    assert [durations[r][0] for r in ("0", "1", "2")] == ["Retrying", "Retrying", "Failed"]
    assert all(0 < seconds < elapsed for _, seconds in durations.values()), durations
    print(f"execution seconds per attempt: { {k: round(v[1], 1) for k, v in durations.items()} }")


# -- 4. suspend -------------------------------------------------------------------------


def test_suspended_at_creation_creates_no_cluster_until_resumed(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str, ray_head: RayHead
) -> None:
    manifest = rayjob(
        "parked", namespace, ray_head, submissionMode="HTTPMode", suspend=True,
        shutdownAfterJobFinishes=True,
    )  # fmt: skip
    with running(ray_crds, kube, namespace) as clusters:
        kube.create(manifest)
        wait_for("Suspended", reaches(kube, namespace, "parked", "Suspended"), 30)
        settle(4)
        suspended = job_status(kube, namespace, "parked")
        created_while_suspended = list(clusters.added)
        resumed = time.monotonic()
        kube.patch(RAY_JOB, "parked", namespace, {"spec": {"suspend": False}})
        status = wait_for("Complete", reaches(kube, namespace, "parked", *FINAL), JOB_SECONDS)
        elapsed = time.monotonic() - resumed
    print(f"\nsuspend at creation: resumed -> Complete in {elapsed:.1f} s")
    assert created_while_suspended == [], created_while_suspended
    assert suspended["jobDeploymentStatus"] == "Suspended", suspended
    assert not suspended.get("rayClusterName") and not suspended.get("jobId")
    assert status["jobDeploymentStatus"] == "Complete", status
    assert status["jobStatus"] == "SUCCEEDED" and status["succeeded"] == 1
    assert clusters.added == [status["rayClusterName"]]


def test_suspend_while_running_deletes_the_cluster_and_resume_runs_again(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str, ray_head: RayHead, tmp_path: Path
) -> None:
    # The first run sleeps; any later run finds the marker and ends at once.
    marker = tmp_path / "ran-once"
    entrypoint = (
        f"python -c \"import os, time; first = not os.path.exists('{marker}'); "
        f"open('{marker}', 'a').close(); time.sleep(600 if first else 0)\""
    )
    manifest = rayjob(
        "pause", namespace, ray_head, submissionMode="HTTPMode", entrypoint=entrypoint,
        shutdownAfterJobFinishes=True,
    )  # fmt: skip
    first_id = ""
    with running(ray_crds, kube, namespace) as clusters:
        try:
            kube.create(manifest)
            status = wait_for(
                "the Ray job running",
                job_running_on_head(kube, namespace, "pause"),
                60,
                explain=lambda: describe_job(kube, namespace, "pause"),
            )
            first_id, first_cluster = status["jobId"], status["rayClusterName"]
            with DeploymentStates(kube, namespace, "pause") as watched:
                suspended_at = time.monotonic()
                kube.patch(RAY_JOB, "pause", namespace, {"spec": {"suspend": True}})
                status = wait_for("Suspended", reaches(kube, namespace, "pause", "Suspended"), 60)
                states = wait_for("the watch", lambda: watched.reached("Suspended"), 10)
            wait_for("the cluster gone", lambda: cluster_gone(kube, namespace, first_cluster), 30)
            to_suspended = time.monotonic() - suspended_at
            # KubeRay does not stop the Ray job on suspend (the cluster's deletion would).
            first_on_head = ray_job(ray_head, first_id)
            resumed = time.monotonic()
            kube.patch(RAY_JOB, "pause", namespace, {"spec": {"suspend": False}})
            final = wait_for("Complete", reaches(kube, namespace, "pause", *FINAL), JOB_SECONDS)
            to_complete = time.monotonic() - resumed
        finally:
            if first_id:
                stop_on_head(ray_head, first_id)
    print(f"\nsuspend while Running: -> Suspended, cluster gone in {to_suspended:.1f} s; "
          f"resumed -> Complete in {to_complete:.1f} s")  # fmt: skip
    assert states[0] in ("Running", "Suspending") and states[-1] == "Suspended", states
    assert "Suspending" in states or states == ["Running", "Suspended"], states
    assert not status.get("rayClusterName") and not status.get("jobId"), status
    assert first_cluster in clusters.deleted
    assert first_on_head == "RUNNING"
    assert final["jobDeploymentStatus"] == "Complete", final
    assert final["jobId"] != first_id and final["rayClusterName"] != first_cluster
    assert final["succeeded"] == 1 and final["failed"] == 0
    assert clusters.added == [first_cluster, final["rayClusterName"]], clusters.added


# -- 5. deletion ------------------------------------------------------------------------


def test_deleting_a_running_rayjob_stops_its_ray_job(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str, ray_head: RayHead
) -> None:
    manifest = rayjob(
        "doomed", namespace, ray_head, submissionMode="HTTPMode", entrypoint=SLEEP_600
    )
    job_id = ""
    with running(ray_crds, kube, namespace):
        try:
            kube.create(manifest)
            status = wait_for(
                "the Ray job running",
                job_running_on_head(kube, namespace, "doomed"),
                60,
                explain=lambda: describe_job(kube, namespace, "doomed"),
            )
            job_id = status["jobId"]
            finalizers = kube.get(RAY_JOB, "doomed", namespace)["metadata"]["finalizers"]
            deleted = time.monotonic()
            kube.delete(RAY_JOB, "doomed", namespace)
            wait_for("the RayJob gone", lambda: job_gone(kube, namespace, "doomed"), 30)
            gone_after = time.monotonic() - deleted
            on_head = wait_for(
                "the Ray job stopped",
                lambda: (
                    (s := ray_job(ray_head, job_id)) in ("STOPPED", "SUCCEEDED", "FAILED") and s
                ),
                30,
            )
        finally:
            if job_id:
                stop_on_head(ray_head, job_id)
    print(f"\ndeleting a running RayJob: gone in {gone_after:.1f} s; Ray job {on_head}")
    assert finalizers == ["ray.io/rayjob-finalizer"]
    assert on_head == "STOPPED"


# -- 6. clusterSelector -----------------------------------------------------------------


def test_cluster_selector_waits_for_the_cluster_runs_on_it_and_leaves_it(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str, ray_head: RayHead
) -> None:
    manifest = rayjob(
        "borrower", namespace, ray_head, submissionMode="HTTPMode",
        clusterSelector={"ray.io/cluster": "shared"}, shutdownAfterJobFinishes=True,
    )  # fmt: skip
    del manifest["spec"]["rayClusterSpec"]
    shared = raycluster("shared", namespace, workers=0)
    head = shared["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    head["ports"] = [{"name": "dashboard", "containerPort": ray_head.dashboard_port}]
    with running(ray_crds, kube, namespace) as clusters:
        kube.create(manifest)
        wait_for(
            "RayClusterNotFound",
            lambda: events(kube, namespace, "RayClusterNotFound", "borrower"),
            30,
        )
        settle(3)
        waiting = job_status(kube, namespace, "borrower")
        created = time.monotonic()
        kube.create(shared)
        status = wait_for("Complete", reaches(kube, namespace, "borrower", *FINAL), JOB_SECONDS)
        elapsed = time.monotonic() - created
        settle(5)  # TTL 0 and a requeue: a deletion would have been asked for by now
        cluster = kube.get(RAY_CLUSTER, "shared", namespace)
    print(f"\nclusterSelector: RayCluster created -> RayJob Complete in {elapsed:.1f} s")
    event = events(kube, namespace, "RayClusterNotFound", "borrower")[0]
    assert event["type"] == "Warning"
    assert f"RayCluster {namespace}/shared set in the clusterSelector" in event["note"]
    assert waiting["jobDeploymentStatus"] == "Initializing", waiting
    assert waiting["rayClusterName"] == "shared"
    assert status["jobDeploymentStatus"] == "Complete", status
    assert status["jobStatus"] == "SUCCEEDED"
    assert status["dashboardURL"].startswith(f"shared-head-svc.{namespace}.svc.")
    assert not cluster["metadata"].get("deletionTimestamp")
    assert clusters.added == ["shared"] and clusters.deleted == []
