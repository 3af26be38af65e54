"""Pinned versions of everything the local control plane is built from.

Each binary is built from a wrapper Go module under ``gomod/<name>/`` whose go.mod and
go.sum pin the same versions; a change here must go with a change there (a test checks).
"""

from __future__ import annotations

from typing import Final

KUBERNETES: Final = "v1.34.4"
"""kube-apiserver, kube-controller-manager, kube-scheduler and kubectl: the default."""
KUBERNETES_1_36: Final = "v1.36.3"
"""The second control-plane version, for what 1.34 lacks (a kubelet that restarts one
container of a ``Never`` pod, ``SidecarSubmitterRestart``; the workload API): chosen per
cluster (``LocalCluster.kubernetes``). Its go.mod says go 1.26.0, which the installed Go
builds."""

WORKLOAD_API_GATES: Final = {"GenericWorkload": True, "GangScheduling": True}
"""The feature gates of 1.36's workload-aware scheduling (the ``scheduling.k8s.io/v1alpha2``
Workload and PodGroup; the scheduler's gang plugin), off by default there: pass as
``start_for_tests(feature_gates=...)`` with ``WORKLOAD_API_RUNTIME_CONFIG``. Every
component gets both (KubeRay's kind config gives GangScheduling to the scheduler alone;
the others know the gate and have no use for it)."""
WORKLOAD_API_RUNTIME_CONFIG: Final = {"scheduling.k8s.io/v1alpha2": True}
"""The API server's ``--runtime-config`` that serves the alpha workload API."""

KUBERNETES_WRAPPERS: Final = {KUBERNETES: "kubernetes", KUBERNETES_1_36: "kubernetes-1.36"}
"""Each control-plane version -> the wrapper module its four commands are built from."""

ETCD: Final = "v3.6.6"
KWOK: Final = "v0.7.0"
"""v0.7.0 still ships built-in pod stages (ready, complete for Job pods, delete)."""

WRAPPER_MODULES: Final = {
    "kubernetes": ("k8s.io/kubernetes", KUBERNETES),
    "etcd": ("go.etcd.io/etcd/server/v3", ETCD),
    "kwok": ("sigs.k8s.io/kwok", KWOK),
}
"""wrapper directory -> (the module it pins, its version): the default version's build."""


def wrapper_modules(kubernetes: str = KUBERNETES) -> dict[str, tuple[str, str]]:
    """The wrapper modules one version's toolset is built from: etcd and kwok shared,
    ``k8s.io/kubernetes`` from that version's own wrapper."""
    if kubernetes not in KUBERNETES_WRAPPERS:
        raise ValueError(
            f"no pinned Kubernetes {kubernetes!r}; one of {', '.join(KUBERNETES_WRAPPERS)}"
        )
    others = {name: pin for name, pin in WRAPPER_MODULES.items() if name != "kubernetes"}
    return {KUBERNETES_WRAPPERS[kubernetes]: ("k8s.io/kubernetes", kubernetes), **others}


GATEWAY_API: Final = "v1.4.1"
"""The Gateway API whose standard-channel Gateway and HTTPRoute CRDs the RayService
incremental-upgrade tests install: the version KubeRay v1.7.0's go.mod requires."""

CRD_MODULES: Final = {
    "gateway-api": ("sigs.k8s.io/gateway-api", GATEWAY_API),
}
"""Wrapper modules nothing is built from, only files read (``gatewayapi.py``); apart from
``WRAPPER_MODULES`` so a change to them does not rebuild the binaries."""
