"""A real local control plane for tests and the demo, built from pinned Go modules.

``python -m hack.localcluster build|up|down|status|env``; tests use
:func:`start_for_tests` through the ``local_cluster`` fixture in ``tests/conftest.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from hack.gobuild import cache_root
from hack.localcluster.build import Toolset, ensure_built, toolset
from hack.localcluster.cluster import LESS_GC, LocalCluster

__all__ = [
    "LESS_GC", "LocalCluster", "Toolset", "cache_root", "ensure_built", "start_for_tests",
    "toolset",
]  # fmt: skip


def start_for_tests(
    state_dir: Path, *, go_runtime: Mapping[str, Mapping[str, str]] | None = None
) -> LocalCluster:
    """Build (or reuse) the binaries and start a cluster that dies with this process;
    ``go_runtime`` as ``LocalCluster``'s (the test sessions pass ``LESS_GC``)."""
    cluster = LocalCluster(
        state_dir=state_dir, tools=ensure_built(), die_with_parent=True,
        go_runtime=go_runtime or {},
    )  # fmt: skip
    cluster.start()
    return cluster
