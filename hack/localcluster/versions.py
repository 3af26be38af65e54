"""Pinned versions of everything the local control plane is built from.

Each binary is built from a wrapper Go module under ``gomod/<name>/`` whose go.mod and
go.sum pin the same versions; a change here must go with a change there (a test checks).
"""

from __future__ import annotations

from typing import Final

KUBERNETES: Final = "v1.34.4"
"""kube-apiserver, kube-controller-manager, kube-scheduler and kubectl."""

ETCD: Final = "v3.6.6"
KWOK: Final = "v0.7.0"
"""v0.7.0 still ships built-in pod stages (ready, complete for Job pods, delete)."""

WRAPPER_MODULES: Final = {
    "kubernetes": ("k8s.io/kubernetes", KUBERNETES),
    "etcd": ("go.etcd.io/etcd/server/v3", ETCD),
    "kwok": ("sigs.k8s.io/kwok", KWOK),
}
"""wrapper directory -> (the module it pins, its version)."""
