"""The KubernetesWAS gate's writes (``controllers/workloadscheduling.py``), shaped after
KubeRay v1.7.0's kubernetes-was unit tests: made once, replaced across passes in
dependency order when the gang's size changes, cleaned up when a cluster stops wanting
one, namesakes of others never touched. The "API server" here is a few lines that keep
two caches as an informer would, with finalizers and UID preconditions honoured; the
real one is ``tests/integration/kubernetes136/test_kubernetes_was.py``."""

from __future__ import annotations

import copy
import itertools
from typing import Any

import pytest

from operator_runtime.api import RayCluster
from operator_runtime.controllers.workloadscheduling import (
    SchedulingCaches,
    cleanup,
    on_submission,
    require_served,
)
from operator_runtime.render.workloadscheduling import (
    POD_GROUP_PROTECTION_FINALIZER,
    build_pod_group,
    build_workload,
)
from operator_runtime.runtime.cache import Cache
from operator_runtime.runtime.configuration import ConfigurationError
from operator_runtime.runtime.errors import AlreadyExists, Conflict, NotFound, TemporaryError
from operator_runtime.runtime.kinds import WORKLOAD, WORKLOAD_POD_GROUP, Object, ResourceKind

RETAIN = "example.com/retain"


class FakeServer:
    """Writes land in the caches at once (as KubeRay's fake client reads its own writes);
    ``lazy_deletes``: a delete is accepted but the object stays (the server has not
    removed it yet)."""

    def __init__(self, *objects: Object, lazy_deletes: bool = False) -> None:
        self.caches = SchedulingCaches(Cache(WORKLOAD), Cache(WORKLOAD_POD_GROUP))
        self.lazy_deletes = lazy_deletes
        self.writes: list[tuple[str, str, str]] = []
        self.preconditions: list[str | None] = []
        self._uids = itertools.count()
        for obj in objects:
            self._cache(obj["kind"]).upsert(self._stamped(obj))

    def _cache(self, kind: str) -> Cache:
        return self.caches.workloads if kind == "Workload" else self.caches.pod_groups

    def _stamped(self, obj: Object) -> Object:
        made = copy.deepcopy(obj)
        made["metadata"].setdefault("uid", f"{made['metadata']['name']}-uid-{next(self._uids)}")
        made["metadata"]["resourceVersion"] = str(next(self._uids))
        return made

    def get(self, kind: str, name: str) -> Object | None:
        return self._cache(kind).get("default", name)

    def create(self, obj: Object) -> Object:
        self.writes.append(("create", obj["kind"], obj["metadata"]["name"]))
        if self.get(obj["kind"], obj["metadata"]["name"]) is not None:
            raise AlreadyExists(409, "exists")
        made = self._stamped(obj)
        self._cache(obj["kind"]).upsert(made)
        return made

    def patch(self, kind: ResourceKind, name: str, namespace: str | None, patch: Object, *,
              resource_version: str | None = None, **_: Any) -> Object:  # fmt: skip
        """A merge patch of ``metadata.finalizers``, the only field the writes patch."""
        self.writes.append(("patch", kind.kind, name))
        current = self.get(kind.kind, name)
        if current is None:
            raise NotFound(404, "gone")
        if resource_version not in (None, current["metadata"]["resourceVersion"]):
            raise Conflict(409, "stale")
        assert set(patch) == {"metadata"} and set(patch["metadata"]) == {"finalizers"}, patch
        patched = {**current, "metadata": {**current["metadata"], **patch["metadata"]}}
        self._store(self._stamped(patched))
        return patched

    def delete(self, kind: ResourceKind, name: str, namespace: str | None = None, *,
               uid: str | None = None, **_: Any) -> None:  # fmt: skip
        self.writes.append(("delete", kind.kind, name))
        self.preconditions.append(uid)
        current = self.get(kind.kind, name)
        if current is None:
            raise NotFound(404, "gone")
        if uid is not None and current["metadata"]["uid"] != uid:
            raise Conflict(409, "precondition")
        if self.lazy_deletes:
            return
        marked = copy.deepcopy(current)
        marked["metadata"]["deletionTimestamp"] = "2026-11-30T00:00:00Z"
        self._store(marked)

    def _store(self, obj: Object) -> None:
        cache = self._cache(obj["kind"])
        if obj["metadata"].get("deletionTimestamp") and not obj["metadata"].get("finalizers"):
            cache.remove(("default", obj["metadata"]["name"]))
        else:
            cache.upsert(obj)

    def min_counts(self) -> tuple[int | None, int | None]:
        workload, group = self.get("Workload", "test-cluster"), self.get("PodGroup", GROUP)
        return (
            workload and workload["spec"]["podGroupTemplates"][0]["schedulingPolicy"]["gang"][
                "minCount"],
            group and group["spec"]["schedulingPolicy"]["gang"]["minCount"],
        )  # fmt: skip


GROUP = "test-cluster-cluster"


def cluster(replicas: int = 3, *, label: str | None = "true", uid: str = "test-cluster-uid",
            name: str = "test-cluster", **spec: Any) -> RayCluster:  # fmt: skip
    container = {"name": "c", "image": "rayproject/ray:2.52.0"}
    return RayCluster.model_validate({
        "metadata": {"name": name, "namespace": "default", "uid": uid,
                     "labels": {"ray.io/gang-scheduling-enabled": label} if label else {}},
        "spec": {
            "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {
                "containers": [container]}}},
            "workerGroupSpecs": [{"groupName": "workers", "replicas": replicas,
                                  "minReplicas": replicas, "maxReplicas": replicas,
                                  "rayStartParams": {},
                                  "template": {"spec": {"containers": [container]}}}],
            **spec,
        },
    })  # fmt: skip


def existing(of: RayCluster, *, finalizers: tuple[str, ...] = ()) -> tuple[Object, Object]:
    """The Workload and PodGroup ``of`` would have (ours), the group with ``finalizers``."""
    workload, group = dict(build_workload(of)), dict(build_pod_group(of))
    group["metadata"] = {**group["metadata"], "finalizers": list(finalizers)}
    return workload, group


def submit(server: FakeServer, of: RayCluster) -> None:
    on_submission(server, server.caches, of)  # type: ignore[arg-type]


def test_creates_the_workload_then_its_pod_group() -> None:
    server = FakeServer()
    submit(server, cluster())
    assert server.writes == [("create", "Workload", "test-cluster"), ("create", "PodGroup", GROUP)]
    assert server.min_counts() == (4, 4)  # 1 head + 3 workers


def test_an_unchanged_cluster_writes_nothing() -> None:
    server = FakeServer()
    submit(server, cluster())
    before = (server.get("Workload", "test-cluster"), server.get("PodGroup", GROUP))
    server.writes.clear()
    submit(server, cluster())
    assert server.writes == []
    assert (server.get("Workload", "test-cluster"), server.get("PodGroup", GROUP)) == before


def test_a_new_size_replaces_both_across_passes_in_dependency_order() -> None:
    server = FakeServer(*existing(cluster(3)))
    with pytest.raises(TemporaryError, match=f"deleted PodGroup default/{GROUP} before replacing"):
        submit(server, cluster(5))
    assert server.get("Workload", "test-cluster") is not None  # the Workload outlives its group
    with pytest.raises(TemporaryError, match="deleted stale Workload"):
        submit(server, cluster(5))
    submit(server, cluster(5))
    assert server.min_counts() == (6, 6)
    assert [w[0] for w in server.writes] == ["delete", "delete", "create", "create"]
    assert all(server.preconditions)  # every delete names the UID it looked at


def test_a_stale_pod_group_alone_is_recreated() -> None:
    workload, group = existing(cluster(3))
    group["spec"] = {**group["spec"], "schedulingPolicy": {"gang": {"minCount": 3}}}
    server = FakeServer(workload, group)
    with pytest.raises(TemporaryError, match="deleted stale PodGroup"):
        submit(server, cluster(3))
    submit(server, cluster(3))
    assert server.min_counts() == (4, 4)


def test_a_delete_the_server_has_not_finished_defers_the_replacement() -> None:
    workload, group = existing(cluster(3), finalizers=(POD_GROUP_PROTECTION_FINALIZER, RETAIN))
    group["spec"] = {**group["spec"], "schedulingPolicy": {"gang": {"minCount": 3}}}
    server = FakeServer(workload, group, lazy_deletes=True)
    uid = server.get("PodGroup", GROUP)["metadata"]["uid"]  # type: ignore[index]
    with pytest.raises(TemporaryError, match="deleted stale PodGroup"):
        submit(server, cluster(3))
    assert server.preconditions == [uid]
    still = server.get("PodGroup", GROUP)
    assert still is not None and still["spec"]["schedulingPolicy"]["gang"]["minCount"] == 3
    assert still["metadata"]["finalizers"] == [RETAIN]  # only Kubernetes' protection is taken
    assert ("create", "PodGroup", GROUP) not in server.writes


def test_a_pod_group_being_deleted_loses_its_protection_finalizer_only() -> None:
    workload, group = existing(cluster(), finalizers=(POD_GROUP_PROTECTION_FINALIZER, RETAIN))
    group["metadata"]["deletionTimestamp"] = "2026-11-30T00:00:00Z"
    server = FakeServer(workload, group)
    with pytest.raises(TemporaryError, match="is being deleted"):
        submit(server, cluster())
    found = server.get("PodGroup", GROUP)
    assert found is not None and found["metadata"]["finalizers"] == [RETAIN]
    assert [w[0] for w in server.writes] == ["patch"]


def test_no_pod_group_while_the_workload_is_being_deleted() -> None:
    workload, _ = existing(cluster())
    workload["metadata"] = {**workload["metadata"], "deletionTimestamp": "2026-11-30T00:00:00Z",
                            "finalizers": ["x"]}  # fmt: skip
    server = FakeServer(workload)
    with pytest.raises(TemporaryError, match="is being deleted"):
        submit(server, cluster())
    assert server.get("PodGroup", GROUP) is None


@pytest.mark.parametrize("which", ["Workload", "PodGroup"])
def test_a_namesake_of_someone_else_is_refused_not_adopted(which: str) -> None:
    ours, theirs = existing(cluster()), existing(cluster(uid="foreign-uid", name="foreign"))
    workload = theirs[0] if which == "Workload" else ours[0]
    group = theirs[1] if which == "PodGroup" else ours[1]
    workload["metadata"] = {**workload["metadata"], "name": "test-cluster"}
    group["metadata"] = {**group["metadata"], "name": GROUP}
    server = FakeServer(*([workload] if which == "Workload" else [workload, group]))
    name = "test-cluster" if which == "Workload" else GROUP
    with pytest.raises(TemporaryError, match=f"{which} default/{name} already exists and is not"):
        submit(server, cluster())
    assert server.writes == []


@pytest.mark.parametrize(
    "unwanted",
    [cluster(label=None), cluster(label="false"), cluster(enableInTreeAutoscaling=True)],
    ids=["no label", "label false", "autoscaling"],
)
def test_a_cluster_that_wants_no_gang_has_its_objects_removed(unwanted: RayCluster) -> None:
    server = FakeServer(*existing(cluster(), finalizers=(POD_GROUP_PROTECTION_FINALIZER,)))
    with pytest.raises(TemporaryError, match=f"waiting for PodGroup default/{GROUP}"):
        submit(server, unwanted)
    assert server.get("PodGroup", GROUP) is None
    assert server.get("Workload", "test-cluster") is not None
    submit(server, unwanted)
    assert server.get("Workload", "test-cluster") is None
    server.writes.clear()
    submit(server, unwanted)  # nothing left: nothing written, no error
    assert server.writes == []


def test_cleanup_leaves_a_namesake_alone_and_removes_ours() -> None:
    workload, _ = existing(cluster())
    _, foreign_group = existing(cluster(uid="foreign-uid"), finalizers=(RETAIN,))
    server = FakeServer(workload, foreign_group)
    assert cleanup(server, server.caches, cluster()) is True  # type: ignore[arg-type]
    assert server.get("Workload", "test-cluster") is None
    assert server.get("PodGroup", GROUP) is not None
    assert cleanup(server, server.caches, cluster()) is False  # type: ignore[arg-type]


class Discovery:
    def __init__(self, served: set[str]) -> None:
        self.served = served

    def serves(self, api_version: str, plural: str) -> bool:
        return plural in self.served


@pytest.mark.parametrize("served", [set(), {"workloads"}, {"podgroups"}])
def test_start_is_refused_unless_both_kinds_are_served(served: set[str]) -> None:
    with pytest.raises(
        ConfigurationError, match=r"KubernetesWAS.*scheduling\.k8s\.io/v1alpha2=true"
    ):
        require_served(Discovery(served))  # type: ignore[arg-type]
    require_served(Discovery({"workloads", "podgroups"}))  # type: ignore[arg-type]
