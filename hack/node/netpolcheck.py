"""``python -m hack.node.netpolcheck`` (in the sandbox): the operator's NetworkPolicies
(``operator_runtime.render.networkpolicy``, as it builds them) enforced by kube-router's
firewall on this kernel, without a kubelet or containerd, so it needs no real-node slot.

A control plane (one kwok node besides) and the real node's namespaces only; a Node
``real-node`` with the node's address, and "pods" made by hand: network namespaces on a
bridge in the node's namespace, with Pod objects whose status carries their addresses
and whose labels are a Ray cluster's. Cluster ``a`` (a K8sJobMode RayJob's, ``DenyAll``):
a head listening on the GCS and dashboard ports, a worker; cluster ``b``: a head; and the
RayJob's submitter. Each probe is a TCP connect, printed with how long the change it
waited for took; exit 0 only when each is as the policies say, before they exist, while
kube-router enforces them, and after ``stop_enforcing``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hack.localcluster import LocalCluster, ensure_built
from hack.node import build as node_build
from hack.node.node import NODE_IP, NODE_NAME, POD_GATEWAY, RealNode
from operator_runtime.api import JSONObject, RayCluster
from operator_runtime.api.labels import LabelKey
from operator_runtime.render.networkpolicy import NetworkPolicyParams, build_network_policies

NAMESPACE = "default"
GCS, DASHBOARD = 6379, 8265
POLICY_SECONDS = 60.0
PODS = {
    "a-head": ("10.245.0.10", {LabelKey.CLUSTER.value: "a", LabelKey.NODE_TYPE.value: "head"}),
    "a-worker": ("10.245.0.11", {LabelKey.CLUSTER.value: "a", LabelKey.NODE_TYPE.value: "worker",
                                 LabelKey.GROUP.value: "cpu"}),
    "b-head": ("10.245.0.12", {LabelKey.CLUSTER.value: "b", LabelKey.NODE_TYPE.value: "head"}),
    "submitter": ("10.245.0.13", {LabelKey.ORIGINATED_FROM_CR_NAME.value: "job",
                                  LabelKey.ORIGINATED_FROM_CRD.value: "RayJob"}),
}  # fmt: skip
"""name -> (address, labels): a head and a worker of cluster ``a``, a head of ``b``, and
the submitter pod of the RayJob ``job`` that owns ``a``."""


class _NamespacesOnly:
    """The real node as the control plane's provider, minus its components."""

    def __init__(self, node: RealNode) -> None:
        self.node = node

    def create(self) -> None:
        self.node.create()

    def start(self, cluster: LocalCluster) -> None:
        pass

    def ready(self, cluster: LocalCluster) -> bool:
        return True

    def stop(self) -> list[str]:
        return self.node.stop()


def ray_cluster(name: str, owned_by_job: bool) -> RayCluster:
    """A RayCluster with ``networkPolicy: DenyAll`` and a worker group ``cpu``."""
    container = {"name": "ray", "image": "ray"}
    metadata: dict[str, object] = {"name": name, "namespace": NAMESPACE, "uid": f"{name}-uid"}
    if owned_by_job:
        metadata["labels"] = {LabelKey.JOB_SUBMISSION_MODE.value: "K8sJobMode"}
        owner = {"apiVersion": "ray.io/v1", "kind": "RayJob", "name": "job", "uid": "job-uid",
                 "controller": True}  # fmt: skip
        metadata["ownerReferences"] = [owner]
    return RayCluster.model_validate({
        "apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": metadata,
        "spec": {"networkPolicy": {"mode": "DenyAll"},
                 "headGroupSpec": {"rayStartParams": {},
                                   "template": {"spec": {"containers": [container]}}},
                 "workerGroupSpecs": [{"groupName": "cpu", "replicas": 1,
                                       "template": {"spec": {"containers": [container]}}}]},
    })  # fmt: skip


def _policies() -> list[JSONObject]:
    """The operator's policies for ``a``, without their owner (no such RayCluster exists
    here, and the garbage collector would delete them)."""
    policies = build_network_policies(params=NetworkPolicyParams(ray_cluster("a", True)))
    for policy in policies:
        metadata = policy["metadata"]
        assert isinstance(metadata, dict)
        metadata.pop("ownerReferences", None)
    return policies


def _pod(node: RealNode, cluster: LocalCluster, index: int, name: str) -> None:
    address, labels = PODS[name]
    netns, veth = f"pod{index}", f"veth{index}"
    for argv in (
        ["ip", "netns", "add", netns],
        ["ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", netns],
        ["ip", "link", "set", veth, "master", "cni0", "up"],
        ["ip", "-n", netns, "addr", "add", f"{address}/24", "dev", "eth0"],
        ["ip", "-n", netns, "link", "set", "eth0", "up"],
        ["ip", "-n", netns, "link", "set", "lo", "up"],
        ["ip", "-n", netns, "route", "add", "default", "via", POD_GATEWAY],
    ):
        node.run(*argv)
    cluster.apply(input=json.dumps({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels},
        "spec": {"nodeName": NODE_NAME, "automountServiceAccountToken": False,
                 "containers": [{"name": "c", "image": "registry.invalid/none"}]},
    }))  # fmt: skip
    status = {"phase": "Running", "hostIP": NODE_IP, "podIP": address, "podIPs": [{"ip": address}]}
    cluster.kubectl("-n", NAMESPACE, "patch", "pod", name, "--subresource=status",
                    "--type=merge", "-p", json.dumps({"status": status}))  # fmt: skip


def _connects(node: RealNode, source: str, target: str, port: int) -> bool:
    netns = f"pod{list(PODS).index(source)}"
    code = f"import socket; socket.create_connection(({PODS[target][0]!r}, {port}), timeout=3)"
    ran = subprocess.run(node.enter(["ip", "netns", "exec", netns, sys.executable, "-c", code]),
                         capture_output=True)  # fmt: skip
    return ran.returncode == 0


def _until(node: RealNode, source: str, target: str, port: int, connects: bool) -> str:
    started = time.monotonic()
    while _connects(node, source, target, port) != connects:
        if time.monotonic() - started > POLICY_SECONDS:
            still = "cut" if connects else "open"
            raise AssertionError(f"{source} -> {target}:{port} still {still} after "
                                 f"{POLICY_SECONDS}s")  # fmt: skip
        time.sleep(0.5)
    outcome = "open" if connects else "cut"
    return f"{source} -> {target}:{port} {outcome} ({time.monotonic() - started:.1f}s)"


def main() -> int:
    state = Path(tempfile.mkdtemp(prefix="netpolcheck-"))
    node = RealNode(state_dir=state / "node", tools=node_build.ensure_built())
    cluster = LocalCluster(state_dir=state / "control-plane", tools=ensure_built(),
                           die_with_parent=True, real_node=_NamespacesOnly(node))  # type: ignore[arg-type]  # fmt: skip
    firewall = node_build.ensure_firewall_built()
    servers: list[subprocess.Popen[bytes]] = []
    try:
        cluster.start(node_count=1)
        cluster.apply(input=json.dumps({"apiVersion": "v1", "kind": "Node",
                                        "metadata": {"name": NODE_NAME}}))  # fmt: skip
        addresses = {"addresses": [{"type": "InternalIP", "address": NODE_IP}]}
        cluster.kubectl("patch", "node", NODE_NAME, "--subresource=status", "--type=merge",
                        "-p", json.dumps({"status": addresses}))  # fmt: skip
        node.run("ip", "link", "add", "cni0", "type", "bridge")
        node.run("ip", "addr", "add", f"{POD_GATEWAY}/24", "dev", "cni0")
        node.run("ip", "link", "set", "cni0", "up")
        for index, name in enumerate(PODS):
            _pod(node, cluster, index, name)
        for port in (GCS, DASHBOARD):
            servers.append(subprocess.Popen(
                node.enter(["ip", "netns", "exec", "pod0", sys.executable, "-m", "http.server",
                            str(port), "--bind", PODS["a-head"][0]]),
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            ))  # fmt: skip
        print("no enforcer:", _until(node, "b-head", "a-head", GCS, True))
        print(f"kube-router healthy in {node.enforce_network_policies(cluster, firewall):.1f}s")
        policies = _policies()
        cluster.apply(input=json.dumps({"apiVersion": "v1", "kind": "List", "items": policies}))
        metadata = [p["metadata"] for p in policies]
        print("applied", [m.get("name") for m in metadata if isinstance(m, dict)])
        print("DenyAll:", _until(node, "b-head", "a-head", GCS, False))
        for source, target, port, connects in (
            ("a-worker", "a-head", GCS, True),
            ("submitter", "a-head", DASHBOARD, True),
            ("submitter", "a-head", GCS, False),
            ("a-worker", "b-head", GCS, False),
        ):
            print("DenyAll:", _until(node, source, target, port, connects))
        node.stop_enforcing()
        print("enforcer stopped:", _until(node, "b-head", "a-head", GCS, True))
    finally:
        for server in servers:
            server.kill()
            server.wait()
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
