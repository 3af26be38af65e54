"""KubeRay's own e2e suite (ray-operator v1.6.2's test packages, ``hack.kuberay_e2e``)
on the real node, against an operator deployed as a pod watching every namespace, as
KubeRay's suite expects: each test makes its own namespace.

``make test`` runs ``kuberay_e2e.SMOKE`` under our operator; ``make kuberay-e2e`` runs
every test of every package under both and writes the per-test report. Each subtest's
outcome must be the one ``kuberay_e2e.EXPECTED`` gives (a pass unless listed there).
"""

from __future__ import annotations

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

ALIASES = {
    RAY_IMAGE: ("rayproject/ray:2.52.0",),
    REDIS_IMAGE: ("redis:7.4.0",),
}
"""The images KubeRay's sample YAMLs name, answered by the node's own: its Ray stand-in
(Ray 2.52.1, a patch release after the samples' 2.52.0) and its Redis (Debian's 7.0)."""

SUITE_SECONDS = 1800.0
"""One top-level test with all its subtests (TestRayCluster runs sixteen samples)."""


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "suite_operator" in metafunc.fixturenames:
        chosen = BOTH if kuberay_e2e.compared() else BOTH[:1]
        metafunc.parametrize("suite_operator", chosen, indirect=True, scope="module")
    if "selected" in metafunc.fixturenames:
        tests = kuberay_e2e.selection()
        metafunc.parametrize("selected", tests, ids=[t.id for t in tests])


@pytest.fixture(scope="module")
def suite_operator(request: pytest.FixtureRequest, real_cluster: LocalCluster,
                   tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:  # fmt: skip
    """The operator, watching every namespace and requesting no CPU (a KubeRay sample's
    cluster asks for both of the node's cores), with the samples' image names known."""
    node = real_node(real_cluster)
    for image, aliases in ALIASES.items():
        for alias in aliases:
            node.ctr("images", "tag", "--force", fully_qualified(image), fully_qualified(alias))
    deploy = deploy_operator if request.param == "ours" else deploy_kuberay
    scope = Scope(all_namespaces=True, cpu_request=False)
    with (
        fresh_namespace(real_cluster, prefix="suite") as namespace,
        deploy(real_cluster, namespace, tmp_path_factory.mktemp("operator"), scope),
    ):
        yield str(request.param)


@pytest.mark.timeout(SUITE_SECONDS + 120)
def test_kuberay_e2e(real_cluster: LocalCluster, suite_operator: str,
                     selected: kuberay_e2e.Selected, tmp_path: Path) -> None:  # fmt: skip
    results, output = kuberay_e2e.run(real_cluster, selected, suite_operator, tmp_path,
                                      SUITE_SECONDS)  # fmt: skip
    kuberay_e2e.record(results)
    for result in results:
        print(f"{suite_operator}: {result.outcome} {result.test} ({result.seconds:.0f}s)")
    wanted = {r.test: kuberay_e2e.expected(r.test, suite_operator) for r in results}
    unexpected = [(r.test, r.outcome, wanted[r.test]) for r in results
                  if r.outcome != wanted[r.test]]  # fmt: skip
    assert not unexpected, f"(test, outcome, expected): {unexpected}\n{output[-6000:]}"
