"""The informer cache: indexes, relist diffs and projections."""

from __future__ import annotations

from operator_runtime.runtime.cache import (
    BY_CLUSTER,
    BY_NAMESPACE,
    BY_OWNER_UID,
    Cache,
    keep_paths,
    strip_managed_fields,
)
from operator_runtime.runtime.kinds import POD


def pod(name: str, namespace: str = "ns", rv: str = "1", **metadata: object) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "resourceVersion": rv, **metadata},
    }


def test_indexes_by_namespace_owner_uid_and_cluster_label() -> None:
    cache = Cache(POD)
    cache.upsert(pod("a", labels={"ray.io/cluster": "c1"},
                     ownerReferences=[{"uid": "owner-1", "name": "c1"}]))  # fmt: skip
    cache.upsert(pod("b", labels={"ray.io/cluster": "c1"}))
    cache.upsert(pod("c", namespace="other", labels={"ray.io/cluster": "c1"}))
    assert [p["metadata"]["name"] for p in cache.by_index(BY_CLUSTER, "ns/c1")] == ["a", "b"]
    assert [p["metadata"]["name"] for p in cache.by_index(BY_OWNER_UID, "owner-1")] == ["a"]
    assert len(cache.by_index(BY_NAMESPACE, "other")) == 1
    assert len(cache.list("ns")) == 2 and len(cache.list()) == 3


def test_updates_move_objects_between_index_values() -> None:
    cache = Cache(POD)
    cache.upsert(pod("a", labels={"ray.io/cluster": "c1"}))
    cache.upsert(pod("a", rv="2", labels={"ray.io/cluster": "c2"}))
    assert cache.by_index(BY_CLUSTER, "ns/c1") == []
    assert len(cache.by_index(BY_CLUSTER, "ns/c2")) == 1
    cache.remove(("ns", "a"))
    assert cache.by_index(BY_CLUSTER, "ns/c2") == [] and len(cache) == 0


def test_replace_reports_adds_changes_and_deletes_missed_while_not_watching() -> None:
    cache = Cache(POD)
    for name in ("kept", "changed", "deleted"):
        cache.upsert(pod(name))
    cache.upsert(pod("elsewhere", namespace="other"))
    upserts, removed = cache.replace([pod("kept"), pod("changed", rv="9"), pod("new")], "ns")
    assert [obj["metadata"]["name"] for obj in removed] == ["deleted"]
    by_name = {new["metadata"]["name"]: old for old, new in upserts}
    assert by_name["new"] is None
    assert by_name["changed"]["metadata"]["resourceVersion"] == "1"
    assert cache.get("other", "elsewhere") is not None, "other namespaces are untouched"


def test_projections_drop_what_controllers_do_not_read() -> None:
    full = pod(
        "a",
        managedFields=[{"manager": "x"}],
        uid="u",
        annotations={"kubectl.kubernetes.io/last-applied-configuration": "{}", "k": "v"},
    )
    full["spec"] = {"nodeName": "n1", "containers": [{"name": "c"}]}
    full["status"] = {"phase": "Running", "conditions": []}
    stripped = strip_managed_fields(full)
    assert "managedFields" not in stripped["metadata"]
    assert stripped["metadata"]["annotations"] == {"k": "v"}
    assert "managedFields" in full["metadata"], "the input is not mutated"
    slim = keep_paths(["status.phase", "spec.nodeName"])(full)
    assert slim["status"] == {"phase": "Running"}
    assert slim["spec"] == {"nodeName": "n1"}
    assert slim["metadata"]["uid"] == "u" and "annotations" not in slim["metadata"]
