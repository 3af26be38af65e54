"""The NetworkPolicies of a RayCluster (gate RayClusterNetworkPolicy): the cases of
KubeRay v1.7.0's networkpolicy_controller_unit_test.go, in our words, against our
builders. The controller's writes (create, update, collision, stale deletion) are proven
on the real API server in tests/integration/raycluster/test_raycluster_network_policy.py."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from operator_runtime.api import RayCluster
from operator_runtime.render import (
    NetworkPolicyParams,
    build_head_network_policy,
    build_network_policies,
    build_worker_network_policy,
    network_policy_matches,
)
from operator_runtime.render.networkpolicy import dashboard_port, submitter_peer

SAME_CLUSTER = {"podSelector": {"matchLabels": {"ray.io/cluster": "test-cluster"}}}
CUSTOM_INGRESS = {"ports": [{"protocol": "TCP", "port": 9999}]}
CUSTOM_EGRESS = {"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}


def cluster(
    *,
    name: str = "test-cluster",
    mode: str | None = "DenyAll",
    policy: dict[str, Any] | None = None,
    ray_start_params: dict[str, str] | None = None,
    groups: tuple[str, ...] = ("small-group",),
    labels: dict[str, str] | None = None,
    owners: list[dict[str, Any]] | None = None,
) -> RayCluster:
    network_policy = dict(policy or {})
    if mode is not None:
        network_policy["mode"] = mode
    metadata: dict[str, Any] = {"name": name, "namespace": "default", "uid": "cluster-uid"}
    if labels:
        metadata["labels"] = labels
    if owners:
        metadata["ownerReferences"] = owners
    container = {"name": "ray", "image": "rayproject/ray:latest"}
    return RayCluster.model_validate(
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "metadata": metadata,
            "spec": {
                "networkPolicy": network_policy,
                "headGroupSpec": {
                    "rayStartParams": ray_start_params or {},
                    "template": {"spec": {"containers": [container]}},
                },
                "workerGroupSpecs": [
                    {
                        "groupName": group,
                        "replicas": 1,
                        "template": {"spec": {"containers": [container]}},
                    }
                    for group in groups
                ],
            },
        }
    )


def rayjob_owned(mode: str = "K8sJobMode", **ref: Any) -> RayCluster:
    owner = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "name": "test-job",
        "uid": "12345",
        "controller": True,
        **ref,
    }
    return cluster(
        name="test-cluster-rayjob", labels={"ray.io/job-submission-mode": mode}, owners=[owner]
    )


def head(c: RayCluster) -> dict[str, Any]:
    return build_head_network_policy(params=NetworkPolicyParams(c))


def worker(c: RayCluster, group: str = "small-group") -> dict[str, Any]:
    return build_worker_network_policy(params=NetworkPolicyParams(c, group))


def test_deny_all_head_policy_restricts_both_ways_and_admits_the_cluster() -> None:
    policy = head(cluster())
    assert policy["metadata"]["name"] == "test-cluster-head"
    assert policy["metadata"]["namespace"] == "default"
    assert policy["metadata"]["labels"] == {
        "app.kubernetes.io/created-by": "kuberay-operator",
        "app.kubernetes.io/name": "kuberay",
        "ray.io/cluster": "test-cluster",
        "ray.io/group": "headgroup",
    }
    [owner] = policy["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "RayCluster", "test-cluster", "cluster-uid", True,
    )  # fmt: skip
    spec = policy["spec"]
    assert spec["podSelector"] == {
        "matchLabels": {"ray.io/cluster": "test-cluster", "ray.io/node-type": "head"}
    }
    assert spec["policyTypes"] == ["Ingress", "Egress"]
    assert spec["ingress"] == [{"from": [SAME_CLUSTER]}]  # all ports: no "ports"
    assert spec["egress"] == [{"to": [SAME_CLUSTER]}]


def test_mode_defaults_to_deny_all() -> None:
    assert head(cluster(mode=None))["spec"]["policyTypes"] == ["Ingress", "Egress"]


def test_deny_all_ingress_leaves_egress_out() -> None:
    spec = head(cluster(mode="DenyAllIngress"))["spec"]
    assert spec["policyTypes"] == ["Ingress"]
    assert spec["ingress"] == [{"from": [SAME_CLUSTER]}]
    assert "egress" not in spec


def test_deny_all_egress_leaves_ingress_out() -> None:
    spec = head(cluster(mode="DenyAllEgress"))["spec"]
    assert spec["policyTypes"] == ["Egress"]
    assert spec["egress"] == [{"to": [SAME_CLUSTER]}]
    assert "ingress" not in spec


def test_deny_all_worker_policy_selects_its_group() -> None:
    policy = worker(cluster())
    assert policy["metadata"]["name"] == "test-cluster-workers-small-group"
    assert policy["metadata"]["labels"]["ray.io/group"] == "small-group"
    spec = policy["spec"]
    assert spec["podSelector"] == {
        "matchLabels": {
            "ray.io/cluster": "test-cluster",
            "ray.io/node-type": "worker",
            "ray.io/group": "small-group",
        }
    }
    assert spec["policyTypes"] == ["Ingress", "Egress"]
    assert spec["ingress"] == [{"from": [SAME_CLUSTER]}]
    assert spec["egress"] == [{"to": [SAME_CLUSTER]}]


def test_deny_all_ingress_worker_policy() -> None:
    spec = worker(cluster(mode="DenyAllIngress"))["spec"]
    assert spec["policyTypes"] == ["Ingress"]
    assert "egress" not in spec


def test_a_group_without_an_entry_takes_the_worker_rules() -> None:
    policy = {"worker": {"ingressRules": [CUSTOM_INGRESS], "egressRules": [CUSTOM_EGRESS]}}
    spec = worker(cluster(policy=policy))["spec"]
    assert spec["ingress"] == [{"from": [SAME_CLUSTER]}, CUSTOM_INGRESS]
    assert spec["egress"] == [{"to": [SAME_CLUSTER]}, CUSTOM_EGRESS]


def test_a_group_entry_replaces_the_worker_rules_entirely() -> None:
    own_ingress = {"from": [{"ipBlock": {"cidr": "192.168.0.0/16"}}]}
    policy = {
        "worker": {"ingressRules": [CUSTOM_INGRESS], "egressRules": [CUSTOM_EGRESS]},
        "workerGroups": [{"groupName": "gpu", "ingressRules": [own_ingress]}],
    }
    c = cluster(policy=policy, groups=("small-group", "gpu"))
    gpu = worker(c, "gpu")["spec"]
    # Its own ingress rule; and no egress rule of ``worker`` although the entry has none.
    assert gpu["ingress"] == [{"from": [SAME_CLUSTER]}, own_ingress]
    assert gpu["egress"] == [{"to": [SAME_CLUSTER]}]
    small = worker(c)["spec"]
    assert small["ingress"] == [{"from": [SAME_CLUSTER]}, CUSTOM_INGRESS]


def test_a_plain_cluster_head_admits_only_its_own_pods() -> None:
    assert submitter_peer(cluster()) is None
    assert head(cluster())["spec"]["ingress"] == [{"from": [SAME_CLUSTER]}]


def test_the_submitter_peer_is_the_controlling_k8sjobmode_rayjob() -> None:
    assert submitter_peer(rayjob_owned()) == {
        "podSelector": {
            "matchLabels": {
                "ray.io/originated-from-cr-name": "test-job",
                "ray.io/originated-from-crd": "RayJob",
            }
        }
    }


@pytest.mark.parametrize(
    ("mode", "ref"),
    [
        pytest.param("HTTPMode", {}, id="http-mode"),
        pytest.param("SidecarMode", {}, id="sidecar-mode: the submitter is in the head pod"),
        pytest.param("InteractiveMode", {}, id="interactive-mode"),
        pytest.param("K8sJobMode", {"controller": False}, id="not-the-controller"),
        pytest.param("K8sJobMode", {"kind": "RayService"}, id="another-kind"),
        pytest.param("K8sJobMode", {"apiVersion": "example.com/v1"}, id="another-group"),
    ],
)
def test_no_submitter_peer_without_a_controlling_k8sjobmode_rayjob(
    mode: str, ref: dict[str, Any]
) -> None:
    c = rayjob_owned(mode, **ref)
    assert submitter_peer(c) is None
    assert len(head(c)["spec"]["ingress"]) == 1


def test_a_rayjob_head_admits_the_submitter_on_the_dashboard_port() -> None:
    ingress = head(rayjob_owned())["spec"]["ingress"]
    assert ingress == [
        {"from": [{"podSelector": {"matchLabels": {"ray.io/cluster": "test-cluster-rayjob"}}}]},
        {
            "from": [submitter_peer(rayjob_owned())],
            "ports": [{"protocol": "TCP", "port": 8265}],
        },
    ]


def test_the_submitter_rule_is_an_ingress_rule_only() -> None:
    spec = head(rayjob_owned())["spec"]
    assert spec["egress"] == [
        {"to": [{"podSelector": {"matchLabels": {"ray.io/cluster": "test-cluster-rayjob"}}}]}
    ]


def test_head_rules_come_after_the_base_rules() -> None:
    policy = {"head": {"ingressRules": [CUSTOM_INGRESS], "egressRules": [CUSTOM_EGRESS]}}
    spec = head(cluster(policy=policy))["spec"]
    assert spec["ingress"] == [{"from": [SAME_CLUSTER]}, CUSTOM_INGRESS]
    assert spec["egress"] == [{"to": [SAME_CLUSTER]}, CUSTOM_EGRESS]


@pytest.mark.parametrize(
    ("params", "port"),
    [
        ({}, 8265),
        ({"dashboard-port": "9265"}, 9265),
        ({"dashboard-port": "+9265"}, 9265),  # Go's ParseInt reads a sign
        ({"dashboard-port": "http"}, 8265),
        ({"dashboard-port": " 9265"}, 8265),
        ({"dashboard-port": "9_265"}, 8265),
        ({"dashboard-port": "2147483648"}, 8265),  # beyond int32
    ],
)
def test_dashboard_port(params: dict[str, str], port: int) -> None:
    assert dashboard_port(cluster(ray_start_params=params)) == port


def test_a_long_cluster_name_is_used_as_is() -> None:
    c = cluster(name="a" * 63)
    assert head(c)["metadata"]["name"] == "a" * 63 + "-head"
    assert worker(c)["metadata"]["name"] == "a" * 63 + "-workers-small-group"


def test_worker_rules_never_reach_the_head() -> None:
    spec = head(cluster(policy={"worker": {"ingressRules": [CUSTOM_INGRESS]}}))["spec"]
    assert spec["ingress"] == [{"from": [SAME_CLUSTER]}]


def test_head_rules_never_reach_a_worker() -> None:
    spec = worker(cluster(policy={"head": {"ingressRules": [CUSTOM_INGRESS]}}))["spec"]
    assert spec["ingress"] == [{"from": [SAME_CLUSTER]}]


def test_one_policy_for_the_head_and_each_group_in_spec_order() -> None:
    c = cluster(groups=("b", "a"))
    names = [p["metadata"]["name"] for p in build_network_policies(params=NetworkPolicyParams(c))]
    assert names == ["test-cluster-head", "test-cluster-workers-b", "test-cluster-workers-a"]


def test_no_policies_without_the_field() -> None:
    c = cluster()
    c = c.model_copy(update={"spec": c.spec.model_copy(update={"network_policy": None})})
    assert build_network_policies(params=NetworkPolicyParams(c)) == []


def test_the_builders_leave_the_model_alone() -> None:
    c = cluster(policy={"head": {"ingressRules": [CUSTOM_INGRESS]}})
    before = c.model_dump()
    head(c)["spec"]["ingress"][1]["ports"][0]["port"] = 1
    assert c.model_dump() == before


# -- whether a stored policy needs an update --------------------------------------------


def stored(policy: dict[str, Any]) -> dict[str, Any]:
    """``policy`` as the API server returns it: metadata it adds, TCP defaulted, and
    empty lists dropped."""
    result = copy.deepcopy(policy)
    result["metadata"].update(resourceVersion="7", uid="np-uid", generation=1)
    for direction in ("ingress", "egress"):
        for rule in result["spec"].get(direction, ()):
            for key in [k for k, v in rule.items() if v == []]:
                del rule[key]
            for port in rule.get("ports", ()):
                port.setdefault("protocol", "TCP")
    return result


def test_a_stored_policy_matches_what_it_was_created_from() -> None:
    rules = {"ingressRules": [{"ports": [{"port": 80}], "from": []}]}
    desired = head(cluster(policy={"head": rules}))
    assert network_policy_matches(stored(desired), desired)


def test_a_changed_rule_or_label_needs_an_update() -> None:
    desired = head(cluster(policy={"head": {"ingressRules": [CUSTOM_INGRESS]}}))
    changed_rule = stored(desired)
    changed_rule["spec"]["ingress"][1]["ports"][0]["port"] = 9998
    assert not network_policy_matches(changed_rule, desired)
    extra_label = stored(desired)
    extra_label["metadata"]["labels"]["team"] = "a"
    assert not network_policy_matches(extra_label, desired)
    other_protocol = stored(desired)
    other_protocol["spec"]["ingress"][1]["ports"][0]["protocol"] = "UDP"
    assert not network_policy_matches(other_protocol, desired)
