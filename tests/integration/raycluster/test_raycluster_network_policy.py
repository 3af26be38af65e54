"""RayClusterNetworkPolicy on the real API server: the NetworkPolicy controller (with its
gate on, beside the RayCluster controller) creates the head's and each group's policy,
puts back what drifts, follows the spec (mode, groups, the field removed) without
rewriting what already matches, deletes only its own stale policies, and refuses to
take over a namesake it does not own.

The API server stores NetworkPolicies but enforces nothing; whether traffic is really
cut needs an enforcer on the real node (not this tier)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from hack.localcluster import LocalCluster
from operator_runtime import controllers
from operator_runtime.controllers.networkpolicy import NetworkPolicyController
from operator_runtime.runtime.client import KubeClient
from operator_runtime.runtime.errors import NotFound
from operator_runtime.runtime.kinds import NETWORK_POLICY, POD, RAY_CLUSTER, RAY_JOB, Object
from operator_runtime.runtime.manager import Manager, ManagerOptions
from operator_runtime.runtime.reconcile import Controller, ObjectKey
from operator_runtime.runtime.registry import ControllerRegistry
from tests.integration.managers import manager_running
from tests.integration.raycluster.conftest import (
    container,
    events,
    get_cluster,
    raycluster,
    recorded,
)
from tests.kubeclient import edit, make_client
from tests.waiting import wait_for

GATE = "RayClusterNetworkPolicy"
MONITORING = {
    "from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "mon"}}}],
    "ports": [{"port": 8080}],  # the API server adds protocol TCP
}
DNS = {"ports": [{"port": 53, "protocol": "UDP"}]}


@dataclass
class PolicyOperator:
    built: list[Controller]

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.built]

    @property
    def controller(self) -> NetworkPolicyController:
        [found] = [c for c in self.built if isinstance(c, NetworkPolicyController)]
        return found


@contextmanager
def policy_operator(
    cluster: LocalCluster, namespace: str, *, gate: bool
) -> Iterator[PolicyOperator]:
    """The RayCluster, RayJob and NetworkPolicy controllers as the operator registers
    them, with the gate on or off."""
    manager = Manager(
        make_client(cluster),
        ManagerOptions(
            namespaces=(namespace,), concurrency=2, metrics_address="0", health_address="0",
            feature_gates=((GATE, gate),),
        ),
    )  # fmt: skip
    registry = ControllerRegistry()
    controllers.register(registry)
    built = registry.build(manager.context(), ["raycluster", "rayjob", "networkpolicy"])
    for controller in built:
        manager.add(controller)
    with manager_running(manager):
        yield PolicyOperator(built)


@pytest.fixture
def np_operator(ray_crds: LocalCluster, namespace: str) -> Iterator[PolicyOperator]:
    with policy_operator(ray_crds, namespace, gate=True) as running:
        assert running.names == ["networkpolicy", "raycluster", "rayjob"]
        yield running


def find(client: KubeClient, namespace: str, name: str) -> Object | None:
    try:
        return client.get(NETWORK_POLICY, name, namespace)
    except NotFound:
        return None


def policy_names(client: KubeClient, namespace: str) -> set[str]:
    return {p["metadata"]["name"] for p in client.list(NETWORK_POLICY, namespace)["items"]}


def group(name: str) -> dict[str, Any]:
    return {
        "groupName": name,
        "replicas": 0,
        "minReplicas": 0,
        "maxReplicas": 2,
        "template": {"spec": {"containers": [container("ray-worker")]}},
    }


def edit_spec(client: KubeClient, namespace: str, name: str, **changes: Any) -> Object:
    """Set top-level ``spec`` fields of RayCluster ``name`` (None removes one), as a
    user's edit that the operator's status writes may race (``edit`` retries a 409)."""

    def change(cluster: Object) -> None:
        for key, value in copy.deepcopy(changes).items():
            if value is None:
                cluster["spec"].pop(key, None)
            else:
                cluster["spec"][key] = value

    return edit(client, RAY_CLUSTER, name, namespace, change)


def owned_by(policy: Object, uid: str) -> bool:
    return any(
        ref.get("controller") and ref.get("uid") == uid
        for ref in policy["metadata"].get("ownerReferences") or ()
    )


def test_policies_follow_the_spec(
    np_operator: PolicyOperator, client: KubeClient, namespace: str
) -> None:
    manifest = raycluster(
        "np",
        namespace,
        workers=0,
        networkPolicy={
            "head": {"ingressRules": [MONITORING], "egressRules": [DNS]},
            "worker": {"egressRules": [DNS]},
            "workerGroups": [{"groupName": "gpu"}],
        },
    )
    manifest["spec"]["workerGroupSpecs"].append(group("gpu"))
    uid = client.create(manifest)["metadata"]["uid"]
    wanted = {"np-head", "np-workers-small", "np-workers-gpu"}
    wait_for("three NetworkPolicies", lambda: policy_names(client, namespace) == wanted)

    head = client.get(NETWORK_POLICY, "np-head", namespace)
    assert owned_by(head, uid)
    assert head["metadata"]["labels"] == {
        "app.kubernetes.io/created-by": "kuberay-operator",
        "app.kubernetes.io/name": "kuberay",
        "ray.io/cluster": "np",
        "ray.io/group": "headgroup",
    }
    same_cluster = {"podSelector": {"matchLabels": {"ray.io/cluster": "np"}}}
    assert head["spec"] == {
        "podSelector": {"matchLabels": {"ray.io/cluster": "np", "ray.io/node-type": "head"}},
        "ingress": [
            {"from": [same_cluster]},
            {**MONITORING, "ports": [{"port": 8080, "protocol": "TCP"}]},
        ],
        "egress": [{"to": [same_cluster]}, DNS],
        "policyTypes": ["Ingress", "Egress"],
    }
    small = client.get(NETWORK_POLICY, "np-workers-small", namespace)
    assert small["spec"]["podSelector"]["matchLabels"] == {
        "ray.io/cluster": "np", "ray.io/node-type": "worker", "ray.io/group": "small",
    }  # fmt: skip
    assert small["spec"]["egress"] == [{"to": [same_cluster]}, DNS]
    # gpu's own (empty) entry replaces the worker rules.
    gpu = client.get(NETWORK_POLICY, "np-workers-gpu", namespace)
    assert gpu["spec"]["egress"] == [{"to": [same_cluster]}]
    created = wait_for(
        "three CreatedNetworkPolicy Events",
        lambda: (
            (found := events(client, namespace, "CreatedNetworkPolicy", "np"))
            and len(found) == 3
            and found
        ),
        timeout=30,
        interval=0.5,
    )
    assert sorted(e["note"].rsplit("/", 1)[1] for e in created) == sorted(wanted)

    # A pass over policies that match (the API server's TCP default included) writes none.
    versions = {n: client.get(NETWORK_POLICY, n, namespace)["metadata"]["resourceVersion"]
                for n in wanted}  # fmt: skip
    cache = np_operator.controller.caches.policies
    wait_for("the policies cached", lambda: all(cache.get(namespace, n) for n in wanted))
    np_operator.controller.reconcile(ObjectKey(namespace, "np"))
    for name, version in versions.items():
        assert client.get(NETWORK_POLICY, name, namespace)["metadata"]["resourceVersion"] == version
    assert not events(client, namespace, "UpdatedNetworkPolicy")

    # Drift is put back: a label added by hand, a policy deleted by hand.
    client.patch(NETWORK_POLICY, "np-head", namespace, {"metadata": {"labels": {"x": "y"}}})
    client.delete(NETWORK_POLICY, "np-workers-gpu", namespace)
    wait_for(
        "the drifted label removed",
        lambda: "x" not in client.get(NETWORK_POLICY, "np-head", namespace)["metadata"]["labels"],
    )
    wait_for("the deleted policy back", lambda: find(client, namespace, "np-workers-gpu"))
    recorded(client, namespace, "UpdatedNetworkPolicy", "np")

    # DenyAllIngress: egress is no longer restricted, so its rules and type go.
    edit_spec(
        client, namespace, "np",
        networkPolicy={"mode": "DenyAllIngress", "head": {"ingressRules": [MONITORING]}},
    )  # fmt: skip
    wait_for(
        "the head policy ingress only",
        lambda: (
            client.get(NETWORK_POLICY, "np-head", namespace)["spec"]["policyTypes"] == ["Ingress"]
        ),
    )
    head = client.get(NETWORK_POLICY, "np-head", namespace)
    assert "egress" not in head["spec"]
    assert len(head["spec"]["ingress"]) == 2

    # A group removed: its policy goes; the others stay.
    edit_spec(client, namespace, "np", workerGroupSpecs=[
        g for g in get_cluster(client, namespace, "np")["spec"]["workerGroupSpecs"]
        if g["groupName"] != "gpu"
    ])  # fmt: skip
    wait_for(
        "the removed group's policy deleted",
        lambda: policy_names(client, namespace) == {"np-head", "np-workers-small"},
    )
    deleted = recorded(client, namespace, "DeletedNetworkPolicy", "np")
    assert "np-workers-gpu" in deleted[0]["note"]

    # The field removed: every policy goes.
    edit_spec(client, namespace, "np", networkPolicy=None)
    wait_for("every policy deleted", lambda: policy_names(client, namespace) == set())


def test_a_namesake_is_never_taken_over(
    np_operator: PolicyOperator, client: KubeClient, namespace: str
) -> None:
    def foreign(name: str, labels: dict[str, str]) -> Object:
        return client.create(
            {
                "apiVersion": "networking.k8s.io/v1",
                "kind": "NetworkPolicy",
                "metadata": {"name": name, "namespace": namespace, "labels": labels},
                "spec": {"podSelector": {"matchLabels": {"team": "other"}}},
            }
        )

    # One of the head's name, unlabelled (so not in the operator's cache); one carrying
    # the cluster's label that the cluster does not want and does not own.
    taken = foreign("col-head", {"team": "other"})
    bystander = foreign("col-workers-gone", {"ray.io/cluster": "col"})
    client.create(raycluster("col", namespace, workers=0, networkPolicy={}))

    collision = recorded(client, namespace, "NetworkPolicyNameCollision", "col")
    assert collision[0]["type"] == "Warning"
    assert "col-head" in collision[0]["note"]
    # The pass stopped at the head: no worker policy, the namesake untouched.
    assert find(client, namespace, "col-workers-small") is None
    after = client.get(NETWORK_POLICY, "col-head", namespace)
    assert after["metadata"]["resourceVersion"] == taken["metadata"]["resourceVersion"]

    # Its owner removes it; the next pass (a spec change starts one) creates ours.
    client.delete(NETWORK_POLICY, "col-head", namespace)
    groups = get_cluster(client, namespace, "col")["spec"]["workerGroupSpecs"]
    cluster = edit_spec(client, namespace, "col", workerGroupSpecs=[*groups, group("extra")])
    uid = cluster["metadata"]["uid"]
    wait_for(
        "the cluster's own policies",
        lambda: (
            {"col-head", "col-workers-small", "col-workers-extra"}
            <= policy_names(client, namespace)
        ),
    )
    assert owned_by(client.get(NETWORK_POLICY, "col-head", namespace), uid)

    # A sweep that deletes the cluster's stale policy leaves the labelled bystander alone.
    edit_spec(client, namespace, "col", workerGroupSpecs=groups)
    wait_for(
        "the stale policy deleted",
        lambda: find(client, namespace, "col-workers-extra") is None,
    )
    kept = client.get(NETWORK_POLICY, "col-workers-gone", namespace)
    assert kept["metadata"]["resourceVersion"] == bystander["metadata"]["resourceVersion"]


def test_managed_elsewhere_and_deleting_clusters_are_left_alone(
    np_operator: PolicyOperator, client: KubeClient, namespace: str
) -> None:
    controller = np_operator.controller
    client.create(
        raycluster(
            "kueue", namespace, workers=0, networkPolicy={},
            managedBy="kueue.x-k8s.io/multikueue",
        )
    )  # fmt: skip
    wait_for("cached", lambda: controller.caches.clusters.get(namespace, "kueue"))
    controller.reconcile(ObjectKey(namespace, "kueue"))
    assert policy_names(client, namespace) == set()

    # A cluster being deleted (held by a finalizer) keeps its policies as they are.
    manifest = raycluster("going", namespace, workers=0, networkPolicy={})
    manifest["metadata"]["finalizers"] = ["test.example.com/hold"]
    client.create(manifest)
    wait_for("its policies", lambda: {"going-head", "going-workers-small"}
             <= policy_names(client, namespace))  # fmt: skip
    client.delete(RAY_CLUSTER, "going", namespace)
    wait_for(
        "deleting, in the cache",
        lambda: (
            (controller.caches.clusters.get(namespace, "going") or {})
            .get("metadata", {})
            .get("deletionTimestamp")
        ),
    )
    edit_spec(client, namespace, "going", networkPolicy=None)
    wait_for(
        "the update cached",
        lambda: (
            "networkPolicy"
            not in (controller.caches.clusters.get(namespace, "going") or {"spec": {}})["spec"]
        ),
    )
    controller.reconcile(ObjectKey(namespace, "going"))
    assert {"going-head", "going-workers-small"} <= policy_names(client, namespace)
    client.patch(RAY_CLUSTER, "going", namespace, {"metadata": {"finalizers": None}})


def test_with_the_gate_off_there_is_no_controller_and_the_field_is_refused(
    ray_crds: LocalCluster, client: KubeClient, namespace: str
) -> None:
    with policy_operator(ray_crds, namespace, gate=False) as running:
        assert running.names == ["raycluster", "rayjob"]
        client.create(raycluster("off", namespace, workers=0, networkPolicy={}))
        refused = recorded(client, namespace, "InvalidRayClusterSpec", "off")
        assert "RayClusterNetworkPolicy" in refused[0]["note"]
    assert policy_names(client, namespace) == set()


def test_a_k8sjobmode_submitter_is_admitted_to_the_dashboard(
    np_operator: PolicyOperator, client: KubeClient, namespace: str
) -> None:
    """The head's extra rule selects the submitter pod the Job controller really makes
    (kwok runs it; nothing here reaches a dashboard)."""
    head_container = container("ray-head")
    head_container["ports"] = [{"name": "dashboard", "containerPort": 8365}]
    client.create(
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayJob",
            "metadata": {"name": "sub", "namespace": namespace},
            "spec": {
                "entrypoint": "python -c 'print(1)'",
                "submissionMode": "K8sJobMode",
                "rayClusterSpec": {
                    "rayVersion": "2.52.0",
                    "networkPolicy": {"mode": "DenyAllIngress"},
                    "headGroupSpec": {
                        "rayStartParams": {"dashboard-port": "8365"},
                        "template": {"spec": {"containers": [head_container]}},
                    },
                },
            },
        }
    )
    cluster_name = wait_for(
        "the RayJob's cluster",
        lambda: (client.get(RAY_JOB, "sub", namespace).get("status") or {}).get("rayClusterName"),
    )
    head = wait_for(
        "the head's policy", lambda: find(client, namespace, f"{cluster_name}-head"), timeout=60
    )
    same_cluster = {"podSelector": {"matchLabels": {"ray.io/cluster": cluster_name}}}
    peer = {
        "podSelector": {
            "matchLabels": {
                "ray.io/originated-from-cr-name": "sub",
                "ray.io/originated-from-crd": "RayJob",
            }
        }
    }
    assert head["spec"]["ingress"] == [
        {"from": [same_cluster]},
        {"from": [peer], "ports": [{"protocol": "TCP", "port": 8365}]},
    ]
    assert head["spec"]["policyTypes"] == ["Ingress"]
    admitted = head["spec"]["ingress"][1]["from"][0]["podSelector"]["matchLabels"]
    selector = ",".join(f"{k}={v}" for k, v in admitted.items())
    submitters = wait_for(
        "the submitter's pod",
        lambda: client.list(POD, namespace, label_selector=selector)["items"],
        timeout=90,
    )
    assert [p["metadata"]["ownerReferences"][0]["name"] for p in submitters] == ["sub"]
    assert submitters[0]["metadata"]["ownerReferences"][0]["kind"] == "Job"
    # The cluster's own pods are not the submitter's.
    assert all("ray.io/node-type" not in p["metadata"]["labels"] for p in submitters)
