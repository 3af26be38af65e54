"""The real node at the second Kubernetes version (1.36): a control plane, kubelet and
kube-proxy of 1.36 (``make localcluster-1.36``, ``make node-1.36``), the rest of the node
(containerd, runc, CNI, CoreDNS) the real-node tier's own.

Only one real node runs in a sandbox, so this tier runs on the worker that runs
``tests/node`` (``tests/conftest.py`` ``GROUPS``), after it: that tier's node has ended
(``tests/tierscope.py``) when this one starts.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hack.localcluster import LocalCluster
from hack.localcluster.versions import KUBERNETES_1_36
from tests import tierscope
from tests.node.harness import start_real_node_cluster


@pytest.fixture(scope="session")
def real_cluster_136(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    cluster = start_real_node_cluster(
        tmp_path_factory.mktemp("real-node-1.36"), kubernetes=KUBERNETES_1_36
    )
    tierscope.end_with_tier(request, Path(__file__).parent)
    try:
        yield cluster
    finally:
        cluster.stop()
