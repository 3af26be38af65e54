"""The local control plane's pins agree where they are written: versions.py and the
wrapper go.mod/go.sum files (binaries of both Kubernetes versions and the Gateway API
CRDs alike)."""

from __future__ import annotations

import re

import pytest

from hack.localcluster import build, versions
from hack.localcluster.build import GOMOD_DIR
from tests.gomodpins import assert_wrapper_pins

PINS = {
    **versions.WRAPPER_MODULES,
    **versions.CRD_MODULES,
    **{wrapper: ("k8s.io/kubernetes", version)
       for version, wrapper in versions.KUBERNETES_WRAPPERS.items()},
}  # fmt: skip


@pytest.mark.parametrize("wrapper", sorted(PINS))
def test_wrapper_module_pins_the_version(wrapper: str) -> None:
    assert_wrapper_pins(GOMOD_DIR, wrapper, *PINS[wrapper])


def test_every_wrapper_directory_is_pinned() -> None:
    assert {path.name for path in GOMOD_DIR.iterdir() if path.is_dir()} == set(PINS)


@pytest.mark.parametrize("version", sorted(versions.KUBERNETES_WRAPPERS))
def test_staging_modules_are_the_same_release(version: str) -> None:
    """Each Kubernetes wrapper replaces every k8s.io staging module by its tag of that
    release (v0.<minor>.<patch> for v1.<minor>.<patch>), none by another's."""
    go_mod = (GOMOD_DIR / versions.KUBERNETES_WRAPPERS[version] / "go.mod").read_text()
    replaced = re.findall(r"^\s*(k8s\.io/\S+) => k8s\.io/\S+ (\S+)$", go_mod, re.MULTILINE)
    assert replaced, f"{version}: no staging module replaced"
    assert {tag for _, tag in replaced} == {"v0" + version.removeprefix("v1")}


def test_each_version_builds_into_its_own_stamp() -> None:
    """A change to one version's wrapper must not rebuild the other's."""
    roots = {version: build.toolset(version).root for version in versions.KUBERNETES_WRAPPERS}
    assert len(set(roots.values())) == len(roots)
    assert all(root.name.startswith(f"k8s-{v}-") for v, root in roots.items())
    assert {build.kubernetes_of(build.toolset(v)) for v in roots} == set(roots)
    assert build.toolset().root == roots[versions.KUBERNETES]
    for version, wrapper in versions.KUBERNETES_WRAPPERS.items():
        others = set(versions.KUBERNETES_WRAPPERS.values()) - {wrapper}
        assert not others & set(versions.wrapper_modules(version)), version
