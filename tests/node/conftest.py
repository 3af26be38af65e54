"""The real-node tier: pods that run, on a kubelet with containerd and runc, beside a
control plane of its own (``hack/node``).

One control plane with one real node and no kwok node serves the whole tier (one
pytest-xdist worker runs it: ``tests/conftest.py`` ``GROUPS``), so every pod lands on the
real node. Images come from files (``hack/node/images.py``): the pause image built from
Kubernetes' ``pause.c``, and the operator's from ``make image``, whose Python the test
pods run.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hack.localcluster import LocalCluster
from tests import tierscope
from tests.kubeclient import fresh_namespace
from tests.node.harness import (
    BOTH,
    deploy_kuberay,
    deploy_operator,
    ray_gone,
    start_real_node_cluster,
)


@pytest.fixture(scope="session")
def real_cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    state_dir = tmp_path_factory.mktemp("real-node")
    cluster = start_real_node_cluster(state_dir, with_kuberay=True)
    tierscope.end_with_tier(request, Path(__file__).parent)
    try:
        yield cluster
    finally:
        cluster.stop()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "ray_namespace" in metafunc.fixturenames:
        chosen = getattr(metafunc.module, "OPERATORS", BOTH)
        metafunc.parametrize("ray_namespace", chosen, indirect=True, scope="module")


@pytest.fixture(scope="module")
def ray_namespace(request: pytest.FixtureRequest, real_cluster: LocalCluster,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:  # fmt: skip
    """A namespace with an operator running in it as a real pod, watching it: ours (with
    the module's ``FEATURE_GATES``, if it has any), and KubeRay's, which every scenario
    runs under too."""
    work_dir = tmp_path_factory.mktemp("operator")
    with fresh_namespace(real_cluster, prefix="ray") as name:
        if request.param == "ours":
            gates = getattr(request.module, "FEATURE_GATES", None)
            deployed = deploy_operator(real_cluster, name, work_dir, feature_gates=gates)
        else:
            deployed = deploy_kuberay(real_cluster, name, work_dir)
        with deployed:
            yield name


@pytest.fixture(autouse=True)
def ray_gone_after(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each scenario in an operator's namespace, its Ray objects and pods deleted
    and gone: a module's scenarios share the namespace, and a cluster one left running
    (a head and two workers, in test_ray_on_the_node.py) ran beside every later one."""
    yield
    if "ray_namespace" in request.fixturenames:
        ray_gone(request.getfixturevalue("real_cluster"),
                 request.getfixturevalue("ray_namespace"))  # fmt: skip


@pytest.fixture
def real_namespace(real_cluster: LocalCluster) -> Iterator[str]:
    with fresh_namespace(real_cluster, prefix="node") as name:
        yield name
