"""KubeRay's own e2e test packages, built from the ray-operator Go module as test
binaries, to run on the real node against our operator and against KubeRay's.

KubeRay writes them for kind with images from Docker Hub; here every image they name is
one the node already holds (``hack.node``), every client they start runs in the
sandbox, and ``tests/node/test_kuberay_e2e.py`` runs them and holds each result to
``tests/node/kuberay_e2e_expected.py``. ``make kuberay-e2e`` runs every package under
both operators and writes the per-test report.
"""

from __future__ import annotations

from pathlib import Path

from hack import gobuild, kuberay

FAMILY = "kuberay-e2e"
GOMOD_DIR = Path(__file__).resolve().parent / "gomod"
RECIPE_REVISION = 1
PACKAGES = ("sampleyaml", "e2e", "e2erayjob", "e2erayservice", "e2eautoscaler")
"""The packages run here: the samples, then the RayCluster, RayJob, RayService and
autoscaler suites. (``e2eupgrade`` upgrades KubeRay itself from a released image, and
``e2eincrementalupgrade`` needs the Gateway API and an Istio-like data plane: neither has
a counterpart for our operator.)"""

__all__ = ["PACKAGES", "ensure_built"]


def _built() -> gobuild.Built:
    digest = gobuild.wrapper_digest(GOMOD_DIR.parent, ["gomod"], f"recipe {RECIPE_REVISION}")
    root = gobuild.cache_root() / FAMILY / f"ray-operator-tests-{kuberay.VERSION}-{digest}"
    return gobuild.Built(root=root, binaries=tuple(f"{p}.test" for p in PACKAGES))


def ensure_built(*, force: bool = False) -> gobuild.Built:
    """Build (or reuse) one test binary per package of ``PACKAGES``.

    Not ``-trimpath``: the samples package finds KubeRay's sample YAMLs from its own
    source file's path, which stays the module cache's absolute one only untrimmed."""

    def build(bin_dir: Path) -> None:
        for package in PACKAGES:
            gobuild.run_go(
                FAMILY,
                f"go test -c {package} {kuberay.VERSION}",
                ["test", "-c", "-o", str(bin_dir / f"{package}.test"),
                 f"{kuberay.MODULE}/test/{package}"],
                GOMOD_DIR,
            )  # fmt: skip

    return gobuild.ensure(
        _built(),
        family=FAMILY,
        build=build,
        versions_text=f"{kuberay.MODULE} {kuberay.VERSION} (test packages)\n",
        force=force,
        make_target="kuberay-e2e-build",
    )
