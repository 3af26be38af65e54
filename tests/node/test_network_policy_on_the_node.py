"""RayClusterNetworkPolicy enforced for real: kube-router's firewall (``hack/node``, built
from its Go module, iptables and ipset from Debian) programs the real node's network
namespace from the NetworkPolicies our operator makes, with the gate on.

Two Ray clusters. ``guarded`` is a K8sJobMode RayJob's cluster (a head that runs no task,
one worker) with ``mode: DenyAll`` and the rules a user must add for it to work: DNS
egress (the worker resolves the head Service before it joins) and ingress from the
operator's pod to the dashboard (the operator polls the job there). ``other`` is a head
alone with ``mode: DenyAllIngress``. Shown:

- the RayJob succeeds: its submitter reaches the dashboard through v1.7.0's submitter
  rule, and its task runs on the worker, which joined the head through the same-cluster
  rule;
- ``other``'s head cannot open the guarded head's GCS port (6379), which the guarded
  worker can;
- ``other`` switched to ``DenyAll`` without a DNS rule: its head can no longer resolve the
  guarded head's Service name, which it resolved a moment before;
- the enforcer stopped (its ``--cleanup-config`` run), the same probe from ``other``'s head
  connects and the name resolves: the failures were the policies', so the test can fail.

Ours alone: KubeRay v1.6.2 has no such gate, and v1.7.0 has no NetworkPolicy e2e.
"""

from __future__ import annotations

import json
import textwrap
import time
from collections.abc import Iterator
from typing import Any

import pytest

from hack.localcluster import LocalCluster
from hack.node import build as node_build
from hack.node.node import CLUSTER_DNS_IP, NODE_IP
from tests.node.harness import (
    all_ready,
    cluster_spec,
    pod_states,
    pods,
    real_node,
    server_side_apply,
)
from tests.waiting import wait_for

OPERATORS = ("ours",)
"""KubeRay v1.6.2 has no RayClusterNetworkPolicy gate."""
FEATURE_GATES = {"RayClusterNetworkPolicy": True}

JOB_SECONDS = 600.0
"""As test_ray_on_the_node.py's: a head and a worker start on two loaded cores, the
submitter's Job waits for the dashboard, the job runs."""
RAY_READY_SECONDS = 420.0
"""``other``'s head, started beside the job's cluster (test_ray_on_the_node.py's bound)."""
POLICY_CHANGE_SECONDS = 120.0
"""From a RayCluster's patch to the enforcer applying the changed policy: the operator's
update of the NetworkPolicy (one reconcile) and kube-router's resync on its event."""
PROBE_TIMEOUT = 5.0
pytestmark = pytest.mark.timeout(JOB_SECONDS + RAY_READY_SECONDS + 2 * POLICY_CHANGE_SECONDS + 300)

DNS_RULE = {
    "to": [{"ipBlock": {"cidr": f"{CLUSTER_DNS_IP}/32"}}, {"ipBlock": {"cidr": f"{NODE_IP}/32"}}],
    "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
}
"""The cluster DNS Service's address and, behind it, CoreDNS's on the node (the address a
packet carries once kube-proxy has translated it, which is what the enforcer sees)."""

PROBE = textwrap.dedent("""
    import socket, sys
    what, target = sys.argv[1], sys.argv[2]
    try:
        if what == "connect":
            host, port = target.rsplit(":", 1)
            socket.create_connection((host, int(port)), timeout=float(sys.argv[3])).close()
        else:
            socket.getaddrinfo(target, 6379)
    except OSError as error:
        print(what, target, "failed:", repr(error))
        sys.exit(3)
    print(what, target, "ok")
""")
"""Run with a Ray container's Python: ``connect HOST:PORT TIMEOUT`` or ``resolve NAME``;
exit 3 when refused, timed out or not resolved."""

TASK = (
    'python -c "import ray, socket; ray.init(); '
    "f = ray.remote(num_cpus=1)(lambda: socket.gethostname()); "
    "print('task ran on', ray.get(f.remote()))\""
)
"""The job: one task, which only the worker can run (the head has no CPU for tasks)."""


@pytest.fixture(scope="module")
def enforcing(real_cluster: LocalCluster) -> Iterator[float]:
    """kube-router's firewall running in the real node for this module (the seconds it
    took to be healthy), stopped and cleaned up after it."""
    node = real_node(real_cluster)
    seconds = node.enforce_network_policies(real_cluster, node_build.ensure_firewall_built())
    try:
        yield seconds
    finally:
        node.stop_enforcing()


def probe(cluster: LocalCluster, namespace: str, pod: str, container: str,
          *arguments: str) -> tuple[int, str]:  # fmt: skip
    ran = cluster.kubectl("-n", namespace, "exec", pod, "-c", container, "--",
                          "python", "-c", PROBE, *arguments, check=False)  # fmt: skip
    return ran.returncode, (ran.stdout + ran.stderr)[-800:]


def operator_labels(cluster: LocalCluster, namespace: str) -> dict[str, str]:
    (deployment,) = cluster.get_json("-n", namespace, "deployments")["items"]
    labels: dict[str, str] = deployment["spec"]["selector"]["matchLabels"]
    return labels


def test_policies_cut_other_clusters_off_and_let_the_job_through(
    real_cluster: LocalCluster, ray_namespace: str, enforcing: float
) -> None:
    ns = ray_namespace
    print(f"\nkube-router healthy {enforcing:.1f}s after its start")
    spec = cluster_spec(1)
    spec["headGroupSpec"]["rayStartParams"] = {"num-cpus": "0"}
    spec["networkPolicy"] = {
        "mode": "DenyAll",
        "head": {
            "ingressRules": [{
                "from": [{"podSelector": {"matchLabels": operator_labels(real_cluster, ns)}}],
                "ports": [{"protocol": "TCP", "port": 8265}],
            }],
            "egressRules": [DNS_RULE],
        },
        "worker": {"egressRules": [DNS_RULE]},
    }  # fmt: skip
    started = time.monotonic()
    server_side_apply(real_cluster, ns, {
        "apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "guarded"},
        "spec": {"entrypoint": TASK, "submissionMode": "K8sJobMode",
                 "shutdownAfterJobFinishes": False, "rayClusterSpec": spec},
    })  # fmt: skip
    other = cluster_spec(0)
    other["networkPolicy"] = {"mode": "DenyAllIngress"}
    server_side_apply(real_cluster, ns, {"apiVersion": "ray.io/v1", "kind": "RayCluster",
                                         "metadata": {"name": "other"}, "spec": other})  # fmt: skip

    def finished() -> dict[str, Any] | None:
        status = real_cluster.get_json("-n", ns, "rayjob", "guarded").get("status", {})
        return status if status.get("jobDeploymentStatus") in ("Complete", "Failed") else None

    status = wait_for("the guarded RayJob to finish", finished, timeout=JOB_SECONDS,
                      interval=2.0, explain=lambda: pod_states(real_cluster, ns))  # fmt: skip
    job_seconds = time.monotonic() - started
    assert status["jobDeploymentStatus"] == "Complete", status
    assert status["jobStatus"] == "SUCCEEDED", status
    guarded = status["rayClusterName"]
    (worker,) = pods(real_cluster, ns, f"ray.io/cluster={guarded},ray.io/node-type=worker")
    logs = real_cluster.kubectl("-n", ns, "logs", "job/guarded").stdout
    assert f"task ran on {worker['metadata']['name']}" in logs, logs[-3000:]
    head_policy = real_cluster.get_json("-n", ns, "networkpolicy", f"{guarded}-head")["spec"]
    submitter = {"podSelector": {"matchLabels": {
        "ray.io/originated-from-cr-name": "guarded", "ray.io/originated-from-crd": "RayJob",
    }}}  # fmt: skip
    assert {"from": [submitter], "ports": [{"port": 8265, "protocol": "TCP"}]} in head_policy[
        "ingress"
    ], head_policy
    print(f"RayJob through DenyAll: SUCCEEDED {job_seconds:.1f}s after its create")

    wait_for("other's head Ready", lambda: all_ready(pods(real_cluster, ns,
                                                          "ray.io/cluster=other"), 1),
             timeout=RAY_READY_SECONDS, interval=2.0,
             explain=lambda: pod_states(real_cluster, ns))  # fmt: skip
    (head,) = pods(real_cluster, ns, f"ray.io/cluster={guarded},ray.io/node-type=head")
    (other_head,) = pods(real_cluster, ns, "ray.io/cluster=other")
    gcs = f"{head['status']['podIP']}:6379"
    # Absolute (the trailing dot): one query, not one per search domain and timeout each.
    service = f"{guarded}-head-svc.{ns}.svc.cluster.local."
    other_name = other_head["metadata"]["name"]

    code, said = probe(real_cluster, ns, worker["metadata"]["name"], "ray-worker",
                       "connect", gcs, str(PROBE_TIMEOUT))  # fmt: skip
    assert code == 0, f"the guarded cluster's own worker cannot reach its GCS: {said}"
    started = time.monotonic()
    code, said = probe(real_cluster, ns, other_name, "ray-head", "connect", gcs,
                       str(PROBE_TIMEOUT))  # fmt: skip
    assert code == 3, f"another cluster's head reached the guarded GCS: {said}"
    print(f"other -> guarded GCS cut ({time.monotonic() - started:.1f}s): {said.strip()}")
    code, said = probe(real_cluster, ns, other_name, "ray-head", "resolve", service)
    assert code == 0, f"other's head, its egress open, cannot resolve {service}: {said}"

    # What a user who restricts egress must add: without a DNS rule nothing resolves.
    real_cluster.kubectl("-n", ns, "patch", "raycluster", "other", "--type=merge", "-p",
                         json.dumps({"spec": {"networkPolicy": {"mode": "DenyAll"}}}))  # fmt: skip
    said_last: list[str] = []

    def unresolved() -> bool:
        code, said = probe(real_cluster, ns, other_name, "ray-head", "resolve", service)
        said_last[:] = [said]
        return code == 3

    started = time.monotonic()
    wait_for("other's head unable to resolve the guarded head under DenyAll", unresolved,
             timeout=POLICY_CHANGE_SECONDS, interval=2.0, explain=lambda: said_last)  # fmt: skip
    print(f"DenyAll without DNS: no name ({time.monotonic() - started:.1f}s): {said_last[0]}")

    # The control: the enforcer gone, the same probes pass.
    real_node(real_cluster).stop_enforcing()
    code, said = probe(real_cluster, ns, other_name, "ray-head", "connect", gcs,
                       str(PROBE_TIMEOUT))  # fmt: skip
    assert code == 0, f"without the enforcer other's head still cannot reach the GCS: {said}"
    code, said = probe(real_cluster, ns, other_name, "ray-head", "resolve", service)
    assert code == 0, f"without the enforcer other's head still cannot resolve: {said}"
