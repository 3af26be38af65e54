"""What a finished RayJob deletes, and when: shutdownAfterJobFinishes with its TTL,
DELETE_RAYJOB_CR_AFTER_JOB_FINISHES, deletionRules and the legacy onSuccess/onFailure.

Every job runs in HTTPMode on the module's real Ray head, so it finishes for real and
``status.endTime`` is the operator's. Deletions are timed against that endTime (written
with one-second precision, so a deletion due at endTime + ttl may come up to 1 s
"early" against the true end, never against endTime). KubeRay looks again at
due + 2 s, so a deletion lands within [due, due + 2 s + a busy machine's slack].
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hack.localcluster import LocalCluster
from hack.rayhead import RayHead
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.errors import NotFound, TransportError
from operator_runtime.runtime.kinds import RAY_CLUSTER, RAY_JOB, Object
from tests.integration.raycluster.conftest import events
from tests.integration.rayjob.conftest import (
    ClusterHosts,
    operator,
    rayjob,
)

SLACK = 8.0
"""KubeRay's 2 s after the due time, and 6 s for a loaded shared machine (CI saw +5.1 s
at load 20). A rule applied before its ttl fails the lower bound."""
AT_ONCE = 2.5
"""A rule due at ttl 0: endTime's lost fraction of a second, and the pass itself."""
SUCCEED = "python -c \"print('done')\""
FAIL = 'python -c "import sys; sys.exit(3)"'


def job(name: str, namespace: str, head: RayHead, entrypoint: str, **spec: Any) -> Object:
    return rayjob(name, namespace, head, submissionMode="HTTPMode", entrypoint=entrypoint, **spec)


def end_time(status: dict[str, Any]) -> float:
    """``status.endTime`` as a Unix time."""
    moment = datetime.datetime.strptime(status["endTime"], "%Y-%m-%dT%H:%M:%SZ")
    return moment.replace(tzinfo=datetime.UTC).timestamp()


def finished(kube: KubeClient, created: Object, state: str) -> dict[str, Any]:
    """The RayJob's status when it first reached Complete or Failed, read from a watch
    that starts at its creation: a rule at ttl 1 s may delete the RayJob before a poll on
    a busy machine would see that status."""
    meta = created["metadata"]
    version, deadline = str(meta["resourceVersion"]), time.monotonic() + 90
    last: dict[str, Any] = {}
    while time.monotonic() < deadline:
        try:
            stream = kube.watch(
                RAY_JOB, meta["namespace"], resource_version=version,
                field_selector=f"metadata.name={meta['name']}", inactivity_timeout=5.0,
            )  # fmt: skip
        except TransportError:
            continue
        try:
            for event in stream:
                obj = event["object"]
                version = str(obj["metadata"].get("resourceVersion") or version)
                if event["type"] == "BOOKMARK":
                    continue
                last = obj.get("status") or {}
                if last.get("jobDeploymentStatus") in ("Complete", "Failed"):
                    assert last["jobDeploymentStatus"] == state, last
                    return last
                if time.monotonic() > deadline:
                    break
        except TransportError:
            continue  # no event for a while: open the watch again
        finally:
            stream.close()
    raise AssertionError(f"RayJob {meta['name']} not {state} in 90 s; last status {last}")


def _get(kube: KubeClient, kind: Any, namespace: str, name: str) -> Object | None:
    try:
        return kube.get(kind, name, namespace)
    except NotFound:
        return None


def _deleting(obj: Object | None) -> bool:
    return obj is None or bool(obj["metadata"].get("deletionTimestamp"))


def _workers_suspended(cluster: Object | None) -> bool:
    groups = (cluster or {}).get("spec", {}).get("workerGroupSpecs") or ()
    return bool(groups) and all(group.get("suspend") is True for group in groups)


@dataclass
class Timeline:
    """When each watched fact first held (Unix time), sampled every 0.1 s."""

    facts: dict[str, Callable[[], bool]]
    first: dict[str, float] = field(default_factory=dict)

    def until(self, last: str, timeout: float) -> dict[str, float]:
        deadline = time.monotonic() + timeout
        while last not in self.first:
            now = time.time()
            for name, holds in self.facts.items():
                if name not in self.first and holds():
                    self.first[name] = now
            assert time.monotonic() < deadline, f"waited {timeout}s for {last}: {self.first}"
            time.sleep(0.1)
        return self.first


def cluster_deleted(kube: KubeClient, namespace: str, name: str) -> Callable[[], bool]:
    return lambda: _deleting(_get(kube, RAY_CLUSTER, namespace, name))


def job_deleted(kube: KubeClient, namespace: str, name: str) -> Callable[[], bool]:
    return lambda: _get(kube, RAY_JOB, namespace, name) is None


def assert_due(what: str, at: float, due: float, slack: float = SLACK) -> None:
    late = at - due
    print(f"  {what}: {late:+.1f} s after due")
    assert 0 <= late <= slack, f"{what} at due{late:+.1f} s, expected within [0, {slack}]"


def test_shutdown_after_finish_deletes_the_cluster_after_its_ttl(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str, ray_head: RayHead
) -> None:
    name = "ttl3"
    manifest = job(
        name, namespace, ray_head, SUCCEED, shutdownAfterJobFinishes=True,
        ttlSecondsAfterFinished=3,
    )  # fmt: skip
    with ClusterHosts(kube, namespace), operator(ray_crds, namespace):
        status = finished(kube, kube.create(manifest), "Complete")
        cluster = status["rayClusterName"]
        timeline = Timeline({"cluster deleted": cluster_deleted(kube, namespace, cluster)})
        deleted = timeline.until("cluster deleted", timeout=30)["cluster deleted"]
        time.sleep(1)
        after = kube.get(RAY_JOB, name, namespace)
    print(f"\nshutdownAfterJobFinishes, ttl 3 s (endTime {status['endTime']}):")
    assert_due("cluster deleted", deleted, end_time(status) + 3)
    assert after["status"]["jobDeploymentStatus"] == "Complete"
    assert after["status"]["jobStatus"] == "SUCCEEDED"
    assert not after["metadata"].get("deletionTimestamp")
    notes = [e.get("note", "") for e in events(kube, namespace, "DeletedRayCluster", name)]
    assert notes == [f"Deleted cluster {namespace}/{cluster}"]


def test_delete_rayjob_cr_after_finish_deletes_the_rayjob_and_gc_its_cluster(
    ray_crds: LocalCluster,
    kube: KubeClient,
    namespace: str,
    ray_head: RayHead,
    gc_knows_rayclusters: None,
) -> None:
    name = "delete-cr"
    manifest = job(
        name, namespace, ray_head, SUCCEED, shutdownAfterJobFinishes=True,
        ttlSecondsAfterFinished=1,
    )  # fmt: skip
    env = {"DELETE_RAYJOB_CR_AFTER_JOB_FINISHES": "true"}
    with ClusterHosts(kube, namespace), operator(ray_crds, namespace, env=env):
        status = finished(kube, kube.create(manifest), "Complete")
        cluster = status["rayClusterName"]
        timeline = Timeline(
            {
                "RayJob gone": job_deleted(kube, namespace, name),
                "cluster gone": lambda: _get(kube, RAY_CLUSTER, namespace, cluster) is None,
            }
        )
        timeline.until("RayJob gone", timeout=30)
        first = timeline.until("cluster gone", timeout=60)
    print(f"\nDELETE_RAYJOB_CR_AFTER_JOB_FINISHES, ttl 1 s (endTime {status['endTime']}):")
    assert_due("RayJob gone", first["RayJob gone"], end_time(status) + 1)
    print(f"  cluster collected {first['cluster gone'] - first['RayJob gone']:.1f} s later")


def test_deletion_rules_run_one_per_pass_in_ttl_order(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str, ray_head: RayHead
) -> None:
    """Workers at 0 s, the cluster at 4 s, the RayJob at 8 s; a FAILED rule that would
    delete the RayJob at once never fires on a success."""

    def rule(policy: str, ttl: int, **condition: str) -> dict[str, Any]:
        return {"policy": policy, "condition": {"ttlSeconds": ttl, **condition}}

    name = "staged"
    rules = [
        rule("DeleteSelf", 8, jobStatus="SUCCEEDED"),
        rule("DeleteWorkers", 0, jobStatus="SUCCEEDED"),
        rule("DeleteCluster", 4, jobStatus="SUCCEEDED"),
        rule("DeleteSelf", 0, jobStatus="FAILED"),
    ]
    manifest = job(name, namespace, ray_head, SUCCEED, deletionStrategy={"deletionRules": rules})
    with ClusterHosts(kube, namespace), operator(ray_crds, namespace):
        status = finished(kube, kube.create(manifest), "Complete")
        cluster = status["rayClusterName"]
        seen: list[Object] = []

        def suspended() -> bool:
            obj = _get(kube, RAY_CLUSTER, namespace, cluster)
            if obj is not None and _workers_suspended(obj):
                seen.append(obj)
                return True
            return False

        timeline = Timeline(
            {
                "workers suspended": suspended,
                "cluster deleted": cluster_deleted(kube, namespace, cluster),
                "RayJob gone": job_deleted(kube, namespace, name),
            }
        )
        first = timeline.until("RayJob gone", timeout=40)
        updated = events(kube, namespace, "UpdatedRayCluster", name)
        deleted = events(kube, namespace, "DeletedRayCluster", name)
    ended = end_time(status)
    print(f"\ndeletionRules Workers@0 Cluster@4 Self@8 (endTime {status['endTime']}):")
    assert seen, "the workers were never seen suspended before the cluster went"
    # Due at once: the pass that follows the Complete status write runs it (KubeRay
    # reconciles on its own status writes), not the 3 s requeue after it.
    assert_due("workers suspended", first["workers suspended"], ended, slack=AT_ONCE)
    assert_due("cluster deleted", first["cluster deleted"], ended + 4)
    assert_due("RayJob gone", first["RayJob gone"], ended + 8)
    assert first["workers suspended"] < first["cluster deleted"] < first["RayJob gone"]
    assert not seen[0]["metadata"].get("deletionTimestamp")
    assert len(updated) == 1 and len(deleted) == 1, (updated, deleted)


def test_a_deployment_status_rule_fires_on_failure_only(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str, ray_head: RayHead
) -> None:
    """jobDeploymentStatus Failed deletes the failed job's cluster at 1 s; the same rule
    leaves a succeeded job's cluster alone."""
    rules = [{"policy": "DeleteCluster", "condition": {"jobDeploymentStatus": "Failed",
                                                       "ttlSeconds": 1}}]  # fmt: skip
    strategy = {"deletionRules": rules}
    with ClusterHosts(kube, namespace), operator(ray_crds, namespace):
        fails = kube.create(job("fails", namespace, ray_head, FAIL, deletionStrategy=strategy))
        succeeds = kube.create(
            job("succeeds", namespace, ray_head, SUCCEED, deletionStrategy=strategy)
        )
        failed = finished(kube, fails, "Failed")
        ok = finished(kube, succeeds, "Complete")
        timeline = Timeline(
            {"cluster deleted": cluster_deleted(kube, namespace, failed["rayClusterName"])}
        )
        deleted = timeline.until("cluster deleted", timeout=30)["cluster deleted"]
        time.sleep(max(0.0, end_time(ok) + 1 + SLACK - time.time()))
        kept = _get(kube, RAY_CLUSTER, namespace, ok["rayClusterName"])
        jobs = [_get(kube, RAY_JOB, namespace, n) for n in ("fails", "succeeds")]
    print(f"\ndeletionRules jobDeploymentStatus Failed, ttl 1 s (endTime {failed['endTime']}):")
    assert failed["reason"] == "AppFailed"
    assert_due("failed job's cluster deleted", deleted, end_time(failed) + 1)
    assert kept is not None and not _deleting(kept), "a Failed rule fired on a success"
    assert all(j is not None and not _deleting(j) for j in jobs)


def test_legacy_on_success_and_on_failure(
    ray_crds: LocalCluster, kube: KubeClient, namespace: str, ray_head: RayHead
) -> None:
    """onSuccess DeleteCluster at ttlSecondsAfterFinished 2 takes the cluster, not the
    RayJob, although DELETE_RAYJOB_CR_AFTER_JOB_FINISHES would have taken the RayJob
    under shutdownAfterJobFinishes alone; onFailure DeleteNone keeps everything."""
    deleting = {"onSuccess": {"policy": "DeleteCluster"}, "onFailure": {"policy": "DeleteSelf"}}
    keeping = {"onSuccess": {"policy": "DeleteCluster"}, "onFailure": {"policy": "DeleteNone"}}
    env = {"DELETE_RAYJOB_CR_AFTER_JOB_FINISHES": "true"}
    with ClusterHosts(kube, namespace), operator(ray_crds, namespace, env=env):
        on_success = kube.create(
            job("on-success", namespace, ray_head, SUCCEED, deletionStrategy=deleting,
                shutdownAfterJobFinishes=True, ttlSecondsAfterFinished=2)
        )  # fmt: skip
        on_failure = kube.create(
            job("on-failure", namespace, ray_head, FAIL, deletionStrategy=keeping)
        )
        ok = finished(kube, on_success, "Complete")
        failed = finished(kube, on_failure, "Failed")
        timeline = Timeline(
            {"cluster deleted": cluster_deleted(kube, namespace, ok["rayClusterName"])}
        )
        deleted = timeline.until("cluster deleted", timeout=30)["cluster deleted"]
        time.sleep(max(1.0, end_time(failed) + SLACK - time.time()))
        survivors = {
            "on-success RayJob": _get(kube, RAY_JOB, namespace, "on-success"),
            "on-failure RayJob": _get(kube, RAY_JOB, namespace, "on-failure"),
            "on-failure cluster": _get(kube, RAY_CLUSTER, namespace, failed["rayClusterName"]),
        }
    print(f"\nlegacy onSuccess DeleteCluster, ttl 2 s (endTime {ok['endTime']}):")
    assert_due("cluster deleted", deleted, end_time(ok) + 2)
    for what, obj in survivors.items():
        assert obj is not None and not _deleting(obj), f"{what} was deleted"
