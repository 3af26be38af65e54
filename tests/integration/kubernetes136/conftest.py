"""The second Kubernetes version: this directory's tests run on a control plane of
Kubernetes 1.36 (``versions.KUBERNETES_1_36``, built by ``make localcluster-1.36``)
instead of the session's 1.34, the default.

Each module here runs a few tiers' tests again, imported from their own modules, so a
difference between the versions shows as one failing here and passing there (the CRD
tier, the side-by-side conformance of a RayCluster, a RayCluster coming up); the tests
that need 1.35+ (SidecarSubmitterRestart) run only here. One worker runs the directory
whole (``tests/conftest.py`` ``GROUPS``) and the control plane ends when it leaves it
(``tests/tierscope.py``), as the e2e tier's does.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hack.localcluster import TEST_GO_RUNTIME, LocalCluster, start_for_tests
from hack.localcluster.versions import (
    KUBERNETES_1_36,
    WORKLOAD_API_GATES,
    WORKLOAD_API_RUNTIME_CONFIG,
)
from tests import tierscope
from tests.integration.raycluster.conftest import (  # noqa: F401 (fixtures, on this cluster)
    client,
    gc_knows_rayclusters,
    gc_probe,
    operator,
    ray_crds,
)
from tests.integration.rayjob.conftest import kube  # noqa: F401 (a fixture)
from tests.rayhead import module_ray_head, ray_head  # noqa: F401 (fixtures)


@pytest.fixture(scope="session")
def local_cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    """This directory's control plane, Kubernetes 1.36 (it replaces the session one of
    ``tests/conftest.py`` here), with the version's default feature gates plus its alpha
    workload API and gang scheduling (``test_kubernetes_was.py``): one control plane for
    the directory, the other tests' objects never name a PodGroup."""
    cluster = start_for_tests(
        tmp_path_factory.mktemp("localcluster-1.36"), go_runtime=TEST_GO_RUNTIME,
        kubernetes=KUBERNETES_1_36, feature_gates=WORKLOAD_API_GATES,
        runtime_config=WORKLOAD_API_RUNTIME_CONFIG,
    )  # fmt: skip
    tierscope.end_with_tier(request, Path(__file__).parent)
    try:
        yield cluster
    finally:
        cluster.stop()
