"""``python -m hack.node.netpolcheck`` (in the sandbox): the operator's NetworkPolicies
(``operator_runtime.render.networkpolicy``, as it builds them) enforced by kube-router's
firewall on this kernel, without a kubelet or containerd, so it needs no real-node slot.

A control plane (one kwok node besides) and the real node's namespaces only; a Node
``real-node`` with the node's address, and "pods" made by hand: network namespaces on a
bridge in the node's namespace, with Pod objects whose status carries their addresses
and whose labels are a Ray cluster's. Cluster ``a`` (a K8sJobMode RayJob's, ``DenyAll``):
a head listening on the GCS and dashboard ports, a worker; cluster ``b``: a head; and the
RayJob's submitter; a UDP answerer on the node's port 53 stands for CoreDNS, which the
worker reaches only once its group has a DNS egress rule. Each probe is printed with how
long the change it waited for took; exit 0 only when each is as the policies say,
before they exist, while kube-router enforces them, and after ``stop_enforcing``.
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


DNS_RULE = {
    "to": [{"ipBlock": {"cidr": f"{NODE_IP}/32"}}],
    "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
}
"""What a user adds for DNS (the real node's CoreDNS listens on the node's address)."""


def ray_cluster(name: str, owned_by_job: bool, worker_egress: bool = False) -> RayCluster:
    """A RayCluster with ``networkPolicy: DenyAll`` (and, ``worker_egress``, the DNS rule
    for its workers) and a worker group ``cpu``."""
    container = {"name": "ray", "image": "ray"}
    metadata: dict[str, object] = {"name": name, "namespace": NAMESPACE, "uid": f"{name}-uid"}
    if owned_by_job:
        metadata["labels"] = {LabelKey.JOB_SUBMISSION_MODE.value: "K8sJobMode"}
        owner = {"apiVersion": "ray.io/v1", "kind": "RayJob", "name": "job", "uid": "job-uid",
                 "controller": True}  # fmt: skip
        metadata["ownerReferences"] = [owner]
    return RayCluster.model_validate({
        "apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": metadata,
        "spec": {"networkPolicy": {"mode": "DenyAll",
                                   **({"worker": {"egressRules": [DNS_RULE]}}
                                      if worker_egress else {})},
                 "headGroupSpec": {"rayStartParams": {},
                                   "template": {"spec": {"containers": [container]}}},
                 "workerGroupSpecs": [{"groupName": "cpu", "replicas": 1,
                                       "template": {"spec": {"containers": [container]}}}]},
    })  # fmt: skip


def _policies(worker_egress: bool = False) -> list[JSONObject]:
    """The operator's policies for ``a``, without their owner (no such RayCluster exists
    here, and the garbage collector would delete them)."""
    policies = build_network_policies(
        params=NetworkPolicyParams(ray_cluster("a", True, worker_egress))
    )
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
    """A TCP connect from ``source`` to ``target`` (a pod, or ``node``: then a UDP
    question to the node's address, which ``_udp_answerer`` answers)."""
    netns = f"pod{list(PODS).index(source)}"
    if target == "node":
        code = (
            "import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
            f"s.settimeout(3); s.sendto(b'?', ({NODE_IP!r}, {port})); s.recvfrom(16)"
        )
    else:
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


def _serve(node: RealNode, argv: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(node.enter(argv), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)  # fmt: skip


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
        answer = (
            "import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
            f"s.bind(({NODE_IP!r}, 53))\nwhile True:\n d, a = s.recvfrom(16); s.sendto(d, a)"
        )
        servers.append(_serve(node, [sys.executable, "-c", answer]))
        head = ["ip", "netns", "exec", "pod0", sys.executable, "-m", "http.server"]
        for port in (GCS, DASHBOARD):
            servers.append(_serve(node, [*head, str(port), "--bind", PODS["a-head"][0]]))
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
            ("a-worker", "node", 53, False),
        ):
            print("DenyAll:", _until(node, source, target, port, connects))
        dns = _policies(worker_egress=True)
        cluster.apply(input=json.dumps({"apiVersion": "v1", "kind": "List", "items": dns}))
        print("DenyAll + the workers' DNS rule:", _until(node, "a-worker", "node", 53, True))
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
