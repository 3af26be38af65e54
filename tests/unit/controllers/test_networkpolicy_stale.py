"""Which NetworkPolicies the NetworkPolicy controller's sweep deletes (KubeRay v1.7.0's
TestDeleteStaleNetworkPolicies, in our words): only those labelled with the cluster's
name, controlled by it, and no longer wanted. The deletes themselves run against the
real API server in tests/integration/raycluster/test_raycluster_network_policy.py."""

from __future__ import annotations

from typing import Any

from operator_runtime.controllers.networkpolicy.controller import stale_policies

CLUSTER = {"metadata": {"name": "test-cluster", "namespace": "default", "uid": "test-uid"}}


def policy(name: str, *, owner_uid: str | None, cluster: str = "test-cluster") -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": "default",
        "labels": {"ray.io/cluster": cluster, "ray.io/group": "some-group"},
    }
    if owner_uid is not None:
        metadata["ownerReferences"] = [
            {"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": "test-cluster",
             "uid": owner_uid, "controller": True},
        ]  # fmt: skip
    return {"metadata": metadata}


def names(policies: list[dict[str, Any]]) -> list[str]:
    return [p["metadata"]["name"] for p in policies]


def test_only_an_unwanted_policy_the_cluster_controls_is_stale() -> None:
    wanted = policy("test-cluster-workers-small-group", owner_uid="test-uid")
    removed = policy("test-cluster-workers-removed-group", owner_uid="test-uid")
    foreign = policy("test-cluster-workers-foreign-group", owner_uid=None)
    other_owner = policy("test-cluster-workers-other", owner_uid="another-uid")
    other_cluster = policy("other-head", owner_uid="test-uid", cluster="other")
    found = stale_policies(
        [wanted, removed, foreign, other_owner, other_cluster],
        CLUSTER,
        {"test-cluster-head", "test-cluster-workers-small-group"},
    )
    assert names(found) == ["test-cluster-workers-removed-group"]


def test_without_the_field_every_policy_the_cluster_controls_is_stale() -> None:
    head = policy("test-cluster-head", owner_uid="test-uid")
    group = policy("test-cluster-workers-small-group", owner_uid="test-uid")
    assert names(stale_policies([head, group], CLUSTER, set())) == [
        "test-cluster-head",
        "test-cluster-workers-small-group",
    ]


def test_a_controller_reference_is_what_counts_not_any_owner() -> None:
    owned_not_controlled = policy("test-cluster-workers-x", owner_uid="test-uid")
    owned_not_controlled["metadata"]["ownerReferences"][0]["controller"] = False
    assert stale_policies([owned_not_controlled], CLUSTER, set()) == []
