"""Session fixtures shared by every tier.

``local_cluster`` starts one real control plane (etcd, kube-apiserver,
kube-controller-manager, kube-scheduler, kwok) for the whole session, on first use.
It never skips: if the control plane cannot be built or started, every test that needs
it fails with the reason.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from hack.localcluster import LocalCluster, start_for_tests

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def local_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    cluster = start_for_tests(tmp_path_factory.mktemp("localcluster"))
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def namespace(local_cluster: LocalCluster) -> Iterator[str]:
    """A fresh namespace whose ``default`` ServiceAccount exists (pods need it)."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    local_cluster.kubectl("create", "namespace", name)
    deadline = time.monotonic() + 60
    while local_cluster.kubectl("-n", name, "get", "sa", "default", check=False).returncode:
        if time.monotonic() > deadline:
            raise TimeoutError(f"ServiceAccount {name}/default was never created")
        time.sleep(0.1)
    yield name
    local_cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)
