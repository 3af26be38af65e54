"""The real node's binaries, built from pinned sources into the shared cache.

``python -m hack.node build`` (``make node``) builds kubelet, kube-proxy, containerd,
runc, the CNI plugins, CoreDNS and pause, and extracts Debian's ``nft`` (and, apart, the
NetworkPolicy enforcer: kube-router with Debian's iptables and ipset);
``python -m hack.node lock`` re-pins the Debian packages; ``python -m
hack.node.netpolcheck`` shows the enforcer cutting what the operator's
NetworkPolicies say on this kernel, without a kubelet.
"""

from __future__ import annotations

from hack.node.build import BINARIES, ensure_built, node_tools

__all__ = ["BINARIES", "ensure_built", "node_tools"]
