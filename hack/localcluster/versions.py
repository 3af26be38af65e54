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

GATEWAY_API: Final = "v1.4.1"
"""The Gateway API whose standard-channel Gateway and HTTPRoute CRDs the RayService
incremental-upgrade tests install: the version KubeRay v1.7.0's go.mod requires."""

CRD_MODULES: Final = {
    "gateway-api": ("sigs.k8s.io/gateway-api", GATEWAY_API),
}
"""Wrapper modules nothing is built from, only files read (``gatewayapi.py``); apart from
``WRAPPER_MODULES`` so a change to them does not rebuild the binaries."""
