"""KubeRay's own e2e suite (ray-operator v1.6.2's test packages, ``hack.kuberay_e2e``)
on the real node, against an operator deployed as a pod watching every namespace, as
KubeRay's suite expects: each test makes its own namespace.

``make test`` runs ``kuberay_e2e.SMOKE`` under our operator; ``make kuberay-e2e`` runs
every test of every package under both and writes the per-test report. Each subtest's
outcome must be the one ``kuberay_e2e.EXPECTED`` gives (a pass unless listed there), or
either a pass or a fail for the few subtests a race inside the test decides
(``kuberay_e2e.RACES``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from hack.image.ray import RAY_IMAGE
from hack.image.redis import REDIS_IMAGE
from hack.localcluster import LocalCluster
from hack.node.images import fully_qualified
from tests.kubeclient import fresh_namespace
from tests.node import kuberay_e2e
from tests.node.harness import BOTH, Scope, deploy_kuberay, deploy_operator, real_node
from tests.node.scaled_requests import cpu_requests_scaled

ALIASES = {
    RAY_IMAGE: ("rayproject/ray:2.52.0", "rayproject/ray:2.51.0"),
    REDIS_IMAGE: ("redis:7.4.0", "redis:7.4"),
}
"""The images KubeRay's sample YAMLs and its tests name, answered by the node's own: its
Ray stand-in (Ray 2.52.1, a patch release after the samples' 2.52.0; also for
``rayproject/ray:2.51.0``, the image TestRayClusterUpgradeStrategy changes the pod
templates to, which checks that the pods are recreated and run, not Ray's version) and
its Redis (Debian's 7.0; ``redis:7.4`` is the GCS FT tests' Redis)."""

SUITE_SECONDS = 1800.0
"""One top-level test with all its subtests (TestRayCluster runs sixteen samples)."""


WHOLE_NODE_PACKAGES = frozenset({"sampleyaml"})
"""Packages with a cluster that asks for both of the node's cores (KubeRay's samples):
their operator requests no CPU, or the cluster would not fit.

Every other package is sized for KubeRay CI's four-core kind node (an autoscaling head
asks for 1.5 CPUs, its container's 1 and the autoscaler's 0.5, and each of its workers
for 1; a multi-host group puts eight 200m workers beside a 300m head). There the
operator requests the 100m its chart gives it (one requesting none gets the smallest CPU
weight there is, cgroup shares of 2 against some 300 for each Ray pod, and ours, starved
of CPU while Ray pods started, missed its liveness probe and was restarted six times in
one run of ``e2erayjob``), and the Ray pods' CPU requests are halved by
``scaled_requests``, for both operators alike (limits, and so the CPUs Ray counts,
unchanged)."""


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "suite_operator" in metafunc.fixturenames:
        chosen = BOTH if kuberay_e2e.compared() else BOTH[:1]
        metafunc.parametrize("suite_operator", chosen, indirect=True, scope="module")
    if "selected" in metafunc.fixturenames:
        tests = kuberay_e2e.selection()
        metafunc.parametrize("selected", tests, ids=[t.id for t in tests])


class SuiteOperator:
    """One operator, deployed as a pod watching every namespace for KubeRay's suite, with
    the samples' image names known; deployed again only when a test's package wants the
    other shape (``WHOLE_NODE_PACKAGES``: a run's tests come package by package)."""

    def __init__(self, name: str, cluster: LocalCluster, work_dirs: pytest.TempPathFactory):
        self.name, self._cluster, self._work_dirs = name, cluster, work_dirs
        self._deployed = contextlib.ExitStack()
        self._whole_node: bool | None = None
        node = real_node(cluster)
        for image, aliases in ALIASES.items():
            for alias in aliases:
                node.ctr("images", "tag", "--force", fully_qualified(image),
                         fully_qualified(alias))  # fmt: skip

    def fit(self, test: kuberay_e2e.Selected) -> None:
        whole_node = test.package in WHOLE_NODE_PACKAGES
        if whole_node == self._whole_node:
            return
        self.close()
        if not whole_node:
            self._deployed.enter_context(
                cpu_requests_scaled(self._cluster, self._work_dirs.mktemp("webhook"))
            )
        deploy = deploy_operator if self.name == "ours" else deploy_kuberay
        scope = Scope(all_namespaces=True, cpu_request=not whole_node)
        namespace = self._deployed.enter_context(fresh_namespace(self._cluster, prefix="suite"))
        self._deployed.enter_context(
            deploy(self._cluster, namespace, self._work_dirs.mktemp("operator"), scope)
        )
        self._whole_node = whole_node

    def close(self) -> None:
        self._deployed.close()
        self._whole_node = None


@pytest.fixture(scope="module")
def suite_operator(
    request: pytest.FixtureRequest,
    real_cluster: LocalCluster,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[SuiteOperator]:
    operator = SuiteOperator(str(request.param), real_cluster, tmp_path_factory)
    try:
        yield operator
    finally:
        operator.close()


@pytest.mark.timeout(SUITE_SECONDS + 120)
def test_kuberay_e2e(real_cluster: LocalCluster, suite_operator: SuiteOperator,
                     selected: kuberay_e2e.Selected, tmp_path: Path) -> None:  # fmt: skip
    suite_operator.fit(selected)
    name = suite_operator.name
    results, output = kuberay_e2e.run(real_cluster, selected, name, tmp_path,
                                      SUITE_SECONDS)  # fmt: skip
    kuberay_e2e.record(results)
    for result in results:
        print(f"{name}: {result.outcome} {result.test} ({result.seconds:.0f}s)")
    unexpected = kuberay_e2e.unexpected(results, name)
    assert not unexpected, f"(test, outcome, expected): {unexpected}\n{output[-6000:]}"
