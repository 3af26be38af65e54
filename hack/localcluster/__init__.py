"""A real local control plane for tests and the demo, built from pinned Go modules.

``python -m hack.localcluster build|up|down|status|env``; tests use
:func:`start_for_tests` through the ``local_cluster`` fixture in ``tests/conftest.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from hack.gobuild import cache_root
from hack.localcluster.build import Toolset, ensure_built, toolset
from hack.localcluster.cluster import TEST_GO_RUNTIME, LocalCluster
from hack.localcluster.versions import KUBERNETES

__all__ = [
    "TEST_GO_RUNTIME", "LocalCluster", "Toolset", "cache_root", "ensure_built", "start_for_tests",
    "toolset",
]  # fmt: skip


def start_for_tests(
    state_dir: Path,
    *,
    go_runtime: Mapping[str, Mapping[str, str]] | None = None,
    kubernetes: str = KUBERNETES,
    feature_gates: Mapping[str, bool] | None = None,
    runtime_config: Mapping[str, bool] | None = None,
) -> LocalCluster:
    """Build (or reuse) the binaries of Kubernetes ``kubernetes`` and start a cluster that
    dies with this process; ``go_runtime``, ``feature_gates`` and ``runtime_config`` as
    ``LocalCluster``'s (the test sessions pass ``TEST_GO_RUNTIME``)."""
    cluster = LocalCluster(
        state_dir=state_dir, tools=ensure_built(kubernetes=kubernetes), die_with_parent=True,
        go_runtime=go_runtime or {}, kubernetes=kubernetes,
        feature_gates=feature_gates or {}, runtime_config=runtime_config or {},
    )  # fmt: skip
    cluster.start()
    return cluster
