"""cert-manager (``hack/certmanager``, built from its Go module) running beside the local
control plane, for the RayClusterMTLS tests: one controller per module, ready when its
informers have synced."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from hack.certmanager import run as certmanager_run
from hack.localcluster import LocalCluster


@pytest.fixture(scope="module")
def cert_manager(
    local_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[certmanager_run.CertManager]:
    started = time.monotonic()
    with certmanager_run.running(local_cluster, tmp_path_factory.mktemp("cert-manager")) as manager:
        print(f"\ncert-manager: installed and ready in {time.monotonic() - started:.1f} s")
        yield manager
