"""Pinned versions of everything the real node is built from.

Each Go binary is built from a wrapper module under ``gomod/<name>/`` whose go.mod and
go.sum pin the same version; a change here must go with a change there (a test checks).
The Debian packages (``nft`` and its libraries, runc's static libseccomp) are pinned by
sha256 in ``debian.lock``.
"""

from __future__ import annotations

from typing import Final

from hack.localcluster import versions as control_plane

KUBERNETES: Final = control_plane.KUBERNETES
"""kubelet and kube-proxy: the control plane's release, in a wrapper of their own so a
change to the node's build never rebuilds the control plane."""

KUBELET_WRAPPERS: Final = {control_plane.KUBERNETES_1_36: "kubernetes-1.36"}
"""The control plane's other versions -> the wrapper their kubelet and kube-proxy are
built from, each under a stamp of its own (``build.kubelet_tools``) that replaces only
those two binaries of the node's: the rest of the node does not change with them."""

CONTAINERD: Final = "v2.3.7"
"""The newest patch of the 2.3 line kind's node image uses."""
RUNC: Final = "v1.4.4"
"""The newest patch of the 1.4 line kind's node image uses."""
CNI_PLUGINS: Final = "v1.9.1"
COREDNS: Final = "v1.14.7"
LOCAL_PATH_PROVISIONER: Final = "v0.0.30"
"""rancher's, kind's default StorageClass's provisioner."""
KUBE_ROUTER: Final = "v2.1.0"
"""cloudnativelabs' kube-router, run as the node's NetworkPolicy enforcer only (its
firewall controller: iptables and ipset); the Go module proxy serves no later v2."""

WRAPPER_MODULES: Final = {
    "kubernetes": ("k8s.io/kubernetes", KUBERNETES),
    "containerd": ("github.com/containerd/containerd/v2", CONTAINERD),
    "runc": ("github.com/opencontainers/runc", RUNC),
    "cni": ("github.com/containernetworking/plugins", CNI_PLUGINS),
    "coredns": ("github.com/coredns/coredns", COREDNS),
    "localpath": ("github.com/rancher/local-path-provisioner", LOCAL_PATH_PROVISIONER),
    "kuberouter": ("github.com/cloudnativelabs/kube-router/v2", KUBE_ROUTER),
}
"""wrapper directory -> (the module it pins, its version)."""
STORAGE_WRAPPERS: Final = ("localpath",)
"""Built under a stamp of their own (``build.storage_tools``): a change to them does not
rebuild the node's other binaries (some 15 minutes), nor theirs these."""
FIREWALL_WRAPPERS: Final = ("kuberouter",)
"""The NetworkPolicy enforcer, under a stamp of its own too (``build.firewall_tools``),
built only when a node enforces NetworkPolicies."""

COREDNS_PLUGINS: Final = (
    "metadata", "reload", "bind", "ready", "health", "prometheus", "errors", "log", "cache",
    "transfer", "kubernetes",
)  # fmt: skip
"""The plugins ``gomod/coredns/main.go`` compiles in, in its directive order: cluster
names only (no forward: nothing is resolved outside the sandbox)."""

NFT_ROOT: Final = "nftables"
"""Debian's package of ``nft``, which kube-proxy's nftables mode execs from PATH; the
lock holds it and its libraries' closure."""
NFT_EXCLUDED: Final = {
    "libc6": "the machine's own C library, which every binary here already loads",
}
"""Dependencies of ``nft`` not extracted, and why."""
SECCOMP_PACKAGE: Final = "libseccomp-dev"
"""The headers and ``libseccomp.a`` runc links statically (only at build time)."""

FIREWALL_ROOTS: Final = ("iptables", "ipset")
"""Debian's packages of the binaries kube-router's firewall execs from PATH (``iptables``,
``iptables-save``, ``iptables-restore``, ``ipset``); ``firewall.lock`` holds them and
their libraries' closure, apart from ``debian.lock`` so that the node's own stamp does
not move with them."""
FIREWALL_EXCLUDED: Final = {
    "libc6": "the machine's own C library, which every binary here already loads",
    "netbase": "/etc/protocols and /etc/services: the machine's own, which the node sees",
}
"""Dependencies of the firewall's binaries not extracted, and why."""
