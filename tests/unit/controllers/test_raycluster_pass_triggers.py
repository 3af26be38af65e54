"""What starts a RayCluster pass: which pod events may (``_pod_event_matters``), the
create queue's wake-up once a group's creates are done, and how soon a pass that waits
asks to look again (``_next_look``). Counted at scale in benchmarks/README.md: a 2 s
timer per waiting cluster made half of all passes, and a deleted cluster's pods one
pass per event while the garbage collector removed them.

The controller is built on informers that never start: the subject is its decisions
over what the caches hold (the real thing is in tests/integration/raycluster)."""

from __future__ import annotations

import dataclasses
import threading

import pytest

from operator_runtime.api import RayCluster
from operator_runtime.api.labels import NodeType
from operator_runtime.controllers.raycluster.controller import RayClusterController, suspend_moved
from operator_runtime.controllers.raycluster.options import (
    SHORT_REQUEUE_SECONDS,
    RayClusterOptions,
)
from operator_runtime.controllers.raycluster.podwrites import single_host_worker
from operator_runtime.controllers.raycluster.run import ClusterRun
from operator_runtime.render import PodParams, build_pod
from operator_runtime.runtime.clock import FakeClock
from operator_runtime.runtime.context import ControllerContext, InformerSet
from operator_runtime.runtime.events import EventRecorder
from operator_runtime.runtime.kinds import Object
from operator_runtime.runtime.reconcile import ObjectKey
from tests.unit.controllers.test_raycluster_pod_expectations import FakeClient, raw_cluster
from tests.unit.controllers.versioned import NoSink


class Queue:
    """What the controller may put into the manager's queue: (key, delay, source)."""

    def __init__(self) -> None:
        self.added: list[tuple[ObjectKey, float, str]] = []

    def add(self, key: ObjectKey, source: str = "add") -> None:
        self.added.append((key, 0.0, source))

    def add_after(self, key: ObjectKey, delay: float, source: str = "requeue_after") -> None:
        self.added.append((key, delay, source))

    def cancel_after(self, key: ObjectKey, source: str) -> None:
        self.added = [item for item in self.added if item[0] != key or item[2] != source]


def controller() -> RayClusterController:
    clock = FakeClock()
    informers = InformerSet(None)  # type: ignore[arg-type]
    context = ControllerContext(
        client=None,  # type: ignore[arg-type]
        informers=informers,
        clock=clock,
        events=lambda _: EventRecorder(NoSink(), clock=clock),  # type: ignore[arg-type]
    )
    return RayClusterController(context, RayClusterOptions())


def cluster() -> Object:
    return raw_cluster(replicas=3)


def pod(name: str, node_type: str = "worker", *, cluster: str = "c") -> Object:
    labels = {"ray.io/cluster": cluster, "ray.io/node-type": node_type, "ray.io/group": "g"}
    owner = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": cluster,
             "uid": f"{cluster}-uid" if cluster != "c" else "cluster-uid",
             "controller": True}  # fmt: skip
    return {"metadata": {"name": name, "namespace": "ns", "labels": labels,
                         "ownerReferences": [owner]}}  # fmt: skip


def test_a_pod_of_a_cluster_not_in_the_cache_starts_no_pass() -> None:
    subject = controller()
    for event in ("ADDED", "MODIFIED", "DELETED"):
        assert not subject._pod_event_matters(event, pod("c-head", "head"), None)  # type: ignore[arg-type]
    subject.tools.caches.clusters.upsert(cluster())
    for event in ("ADDED", "MODIFIED", "DELETED"):
        assert subject._pod_event_matters(event, pod("c-head", "head"), None)  # type: ignore[arg-type]


def test_a_cluster_with_creates_in_flight_waits_for_the_queue_to_wake_it() -> None:
    """Its pods' and Services' creates and updates start no pass meanwhile (the head's
    neither: it was created by the pass that queued the workers); deletions do."""
    subject = controller()
    woken = Queue()
    subject.bind_queue(woken)
    subject.tools.caches.clusters.upsert(cluster())
    other = {**cluster(), "metadata": {**cluster()["metadata"], "name": "c2", "uid": "c2-uid"}}
    subject.tools.caches.clusters.upsert(other)
    gate = threading.Event()
    subject.tools.creates.submit("ns/c/g", [gate.wait], wanted=lambda: True)
    head_service = {**pod("c-head-svc"), "kind": "Service"}
    assert not subject._pod_event_matters("MODIFIED", pod("c-g-1"), None)
    assert subject._pod_event_matters("DELETED", pod("c-g-1"), None)
    assert not subject._pod_event_matters("MODIFIED", pod("c-head", "head"), None)
    assert not subject._child_event_matters("ADDED", head_service, None)
    assert subject._child_event_matters("DELETED", head_service, None)
    assert subject._pod_event_matters("MODIFIED", pod("c2-head", "head", cluster="c2"), None)
    gate.set()
    assert subject.tools.creates.wait_idle(10)
    assert woken.added == [(ObjectKey("ns", "c"), 0.0, "creates_done")]
    assert subject._pod_event_matters("MODIFIED", pod("c-g-1"), None)
    assert subject._pod_event_matters("MODIFIED", pod("c-head", "head"), None)
    assert subject._child_event_matters("ADDED", head_service, None)


def run_of(subject: RayClusterController) -> ClusterRun:
    raw = cluster()
    return ClusterRun(subject.tools, ObjectKey("ns", "c"), raw, RayCluster.model_validate(raw))


@pytest.mark.parametrize("bound", [False, True])
def test_how_soon_a_pass_that_waits_looks_again(bound: bool) -> None:
    subject = controller()
    if bound:
        subject.bind_queue(Queue())
    resync = subject.options.requeue_seconds
    idle = run_of(subject)
    assert subject._next_look(idle, soon=False) == resync
    assert subject._next_look(idle, soon=True) == SHORT_REQUEUE_SECONDS
    queued = run_of(subject)
    queued.waiting_on_cache = True  # only on its queued creates: recheck_in None
    # In a manager the queue wakes it; alone, nothing would, so it polls as before.
    assert subject._next_look(queued, soon=False) == (resync if bound else 2.0)
    named = run_of(subject)
    named.waiting_on_cache = True
    named.recheck_within(40.0)
    named.recheck_within(90.0)
    # A lost event costs one expectation timeout, not that plus the resync.
    assert subject._next_look(named, soon=False) == (40.0 if bound else 2.0)


@pytest.mark.parametrize("indexing", [True, False])
def test_a_worker_rendered_once_per_pass_is_the_pod_rendered_for_its_index(indexing: bool) -> None:
    subject = controller()
    gates = dataclasses.replace(
        subject.options.render.feature_gates, ray_multi_host_indexing=indexing
    )
    options = dataclasses.replace(
        subject.options, render=dataclasses.replace(subject.options.render, feature_gates=gates)
    )
    tools = dataclasses.replace(subject.tools, options=options)
    raw = cluster()
    run = ClusterRun(tools, ObjectKey("ns", "c"), raw, RayCluster.model_validate(raw))
    group = run.cluster.spec.worker_group_specs[0]  # type: ignore[index]
    for index in (0, 3, 7):
        params = PodParams(cluster=run.cluster, node_type=NodeType.WORKER, group_name="g",
                           options=options.render, replica_index=index)  # fmt: skip
        assert single_host_worker(run, group, index) == build_pod(params=params)
    assert len(run.worker_renders) == 1


def with_status(obj: Object, phase: str, ready: bool) -> Object:
    status = {"phase": phase, "conditions": [{"type": "Ready", "status": str(ready)}]}
    return {**obj, "status": status}


def test_an_update_that_can_change_only_the_counts_is_put_off_the_last_one_is_not() -> None:
    subject = controller()
    queue = Queue()
    subject.bind_queue(queue)
    subject.tools.caches.clusters.upsert(cluster())
    pods = subject.tools.caches.pods
    pods.upsert(with_status(pod("c-head", "head"), "Running", True))
    for name in ("c-g-1", "c-g-2", "c-g-3"):
        pods.upsert(with_status(pod(name), "Pending", False))

    def turns(name: str, phase: str = "Running", ready: bool = True) -> bool:
        old = pods.get("ns", name)
        assert old is not None
        new = with_status(pod(name), phase, ready)
        pods.upsert(new)  # the informer updates its cache before the handlers run
        return subject._pod_event_matters("MODIFIED", new, old)

    assert not turns("c-g-1"), "c-g-2 and c-g-3 are not ready: only the counts change"
    assert queue.added == [(ObjectKey("ns", "c"), 2.0, "Pod/MODIFIED, counts only")]
    assert turns("c-g-2", "Failed", False), "a pod to replace is acted on at once"
    pods.upsert(with_status(pod("c-g-2"), "Running", True))
    assert turns("c-g-3"), "the last one makes the cluster ready: at once"
    relabelled = with_status(pod("c-g-1"), "Running", True)
    relabelled["metadata"]["labels"] = {**relabelled["metadata"]["labels"], "x": "y"}
    assert subject._pod_event_matters("MODIFIED", relabelled, pods.get("ns", "c-g-1"))


class Writes(FakeClient):
    """Records creates (``FakeClient``) and status writes."""

    def __init__(self) -> None:
        super().__init__()
        self.statuses: list[Object] = []

    def update_status(self, obj: Object) -> Object:
        self.statuses.append(obj["status"])
        metadata = obj["metadata"]
        version = str(int(metadata.get("resourceVersion") or 0) + 1)
        return {**obj, "metadata": {**metadata, "resourceVersion": version}}


@pytest.mark.parametrize("bound", [True, False])
def test_a_pass_that_made_pods_leaves_the_status_to_the_pass_that_sees_them(bound: bool) -> None:
    """Its status would say the pods it just made are missing (a new cluster's first
    write was "Head Pod not found"): the pass their events or the queue's wake-up start
    writes it once. Without a queue to wake it, the pass writes at once, as before."""
    subject, writes = controller(), Writes()
    subject.tools = dataclasses.replace(subject.tools, client=writes)
    if bound:
        subject.bind_queue(Queue())
    subject.tools.caches.clusters.upsert(cluster())
    head_service = {**pod("c-head-svc", "head"), "spec": {"clusterIP": "10.0.0.1"}}
    subject.tools.caches.services.upsert(head_service)  # made by an earlier pass
    key = ObjectKey("ns", "c")
    subject.reconcile(key)
    assert subject.tools.creates.wait_idle(10)
    made = [obj for obj in writes.created if obj.get("kind") == "Pod"]
    assert len(made) == 4, "the head and 3 workers"
    assert len(writes.statuses) == (0 if bound else 1)
    for made_pod in made:  # their ADDED events reach the cache
        subject.tools.caches.pods.upsert(made_pod)
    subject.reconcile(key)
    assert len(writes.statuses) == (1 if bound else 2)
    assert writes.statuses[-1]["desiredWorkerReplicas"] == 3
    # A pass before the cache shows that write starts from the written object: it
    # neither writes again nor, against the API server, gets a conflict for it.
    subject.reconcile(key)
    assert len(writes.statuses) == (1 if bound else 2)


def _suspend_conditions(suspending: str, suspended: str) -> Object:
    return {"conditions": [{"type": "RayClusterSuspending", "status": suspending},
                           {"type": "RayClusterSuspended", "status": suspended}]}  # fmt: skip


def test_only_a_status_write_that_moves_a_suspension_on_asks_for_the_next_pass() -> None:
    """Our own status write starts no pass, so the write that sets Suspending (the next
    pass deletes the pods) or clears Suspended (it creates them) asks for one; any other
    write leaves the next pass to events, where KubeRay looked again after 2 s."""
    running = _suspend_conditions("False", "False")
    suspending = _suspend_conditions("True", "False")
    suspended = _suspend_conditions("False", "True")
    assert not suspend_moved(running, {**running, "state": "ready"})
    assert not suspend_moved({}, {"state": "ready"}), "without the conditions gate"
    assert suspend_moved(running, suspending)
    assert suspend_moved(suspending, suspending), "the pods are not gone yet"
    assert suspend_moved(suspending, suspended)
    assert suspend_moved(suspended, running), "resumed: the next pass creates the pods"
    assert not suspend_moved(suspended, {**suspended, "state": "suspended"})


def test_a_pass_ends_the_timer_a_counts_only_update_set_for_it() -> None:
    """The pass reads that pod from the cache: the timer would start one more pass with
    nothing left to do. A timer of any other source is the pass's own business."""
    subject = controller()
    queue = Queue()
    subject.bind_queue(queue)
    key = ObjectKey("ns", "gone")  # not in the cache: the pass ends at once
    queue.add_after(key, 2.0, "Pod/MODIFIED, counts only")
    queue.add_after(ObjectKey("ns", "other"), 2.0, "Pod/MODIFIED, counts only")
    queue.add_after(key, 40.0, "requeue_after")
    subject.reconcile(key)
    assert queue.added == [
        (ObjectKey("ns", "other"), 2.0, "Pod/MODIFIED, counts only"),
        (key, 40.0, "requeue_after"),
    ]
