"""``python -m hack.node.netpolcheck`` (in the sandbox): kube-router's firewall on this
kernel, without a kubelet or containerd, so it needs no real-node slot.

A control plane (one kwok node besides) and the real node's namespaces only; a Node
``real-node`` with the node's address, and two "pods" made by hand: network namespaces on
a bridge in the node's namespace, with Pod objects whose status carries their addresses.
A server listens in one; the other connects to it with no enforcer, with the enforcer and
no policy, with a policy that admits only ``app=friend`` pods, once relabelled a friend,
and after ``stop_enforcing``. It prints each outcome with its time; exit 0 only when each
is as the policy says.
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

SERVER, CLIENT = ("10.245.0.10", "server"), ("10.245.0.11", "client")
PORT = 6379
POLICY_SECONDS = 60.0


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


def _pod(node: RealNode, cluster: LocalCluster, index: int, address: str, app: str) -> None:
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
        "metadata": {"name": app, "namespace": "default", "labels": {"app": app}},
        "spec": {"nodeName": NODE_NAME, "automountServiceAccountToken": False,
                 "containers": [{"name": "c", "image": "registry.invalid/none"}]},
    }))  # fmt: skip
    status = {"phase": "Running", "hostIP": NODE_IP, "podIP": address, "podIPs": [{"ip": address}]}
    cluster.kubectl("-n", "default", "patch", "pod", app, "--subresource=status",
                    "--type=merge", "-p", json.dumps({"status": status}))  # fmt: skip


def _connects(node: RealNode) -> bool:
    code = f"import socket; socket.create_connection(({SERVER[0]!r}, {PORT}), timeout=3).close()"
    ran = subprocess.run(node.enter(["ip", "netns", "exec", "pod1", sys.executable, "-c", code]),
                         capture_output=True)  # fmt: skip
    return ran.returncode == 0


def _until(node: RealNode, connects: bool) -> float:
    started = time.monotonic()
    while _connects(node) != connects:
        if time.monotonic() - started > POLICY_SECONDS:
            raise AssertionError(f"still {'cut' if connects else 'open'} after {POLICY_SECONDS}s")
        time.sleep(0.5)
    return time.monotonic() - started


def main() -> int:
    state = Path(tempfile.mkdtemp(prefix="netpolcheck-"))
    node = RealNode(state_dir=state / "node", tools=node_build.ensure_built())
    cluster = LocalCluster(state_dir=state / "control-plane", tools=ensure_built(),
                           die_with_parent=True, real_node=_NamespacesOnly(node))  # type: ignore[arg-type]  # fmt: skip
    firewall = node_build.ensure_firewall_built()
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
        _pod(node, cluster, 0, *SERVER)
        _pod(node, cluster, 1, *CLIENT)
        server = subprocess.Popen(
            node.enter(["ip", "netns", "exec", "pod0", sys.executable, "-m", "http.server",
                        str(PORT), "--bind", SERVER[0]]),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            print(f"no enforcer: open after {_until(node, True):.1f}s")
            healthy = node.enforce_network_policies(cluster, firewall)
            print(f"kube-router healthy in {healthy:.1f}s")
            print(f"enforcer, no policy: open ({_connects(node)})")
            cluster.apply(input=json.dumps({
                "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                "metadata": {"name": "friends-only", "namespace": "default"},
                "spec": {"podSelector": {"matchLabels": {"app": "server"}},
                         "policyTypes": ["Ingress"],
                         "ingress": [{"from": [{"podSelector": {
                             "matchLabels": {"app": "friend"}}}]}]},
            }))  # fmt: skip
            print(f"policy: cut after {_until(node, False):.1f}s")
            cluster.kubectl("-n", "default", "label", "pod", "client", "app=friend",
                            "--overwrite")  # fmt: skip
            print(f"client a friend: open after {_until(node, True):.1f}s")
            cluster.kubectl("-n", "default", "label", "pod", "client", "app=client",
                            "--overwrite")  # fmt: skip
            print(f"client no friend again: cut after {_until(node, False):.1f}s")
            node.stop_enforcing()
            print(f"enforcer stopped, its rules removed: open after {_until(node, True):.1f}s")
        finally:
            server.kill()
            server.wait()
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
