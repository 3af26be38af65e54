"""The Redis image ``make redis-image`` built (hack/image/redis): reproducible, non-root,
one layer of the locked Debian packages. That it serves Ray's GCS is the real node's to
show (tests/node/test_gcs_ft_on_the_node.py)."""

from __future__ import annotations

import tarfile
from pathlib import Path

from hack.image import ImageBuild, config_document, manifest, unpack
from hack.image.redis import REDIS_VERSION, built
from hack.image.redis import build as redis_build
from tests.integration.image.rebuild import assert_builds_again_the_same


def test_building_again_from_the_cached_inputs_gives_the_same_digest(tmp_path: Path) -> None:
    assert_builds_again_the_same(
        built(), redis_build.build, tmp_path / "again",
        "was the recipe changed since `make redis-image`?",
    )  # fmt: skip


def test_the_config_runs_redis_server_as_redis() -> None:
    image: ImageBuild = built()
    settings = config_document(image.layout)["config"]
    assert not settings.get("Entrypoint")
    assert settings["Cmd"][0] == "redis-server"
    assert settings["User"] == "999:999"
    assert settings["WorkingDir"] == "/data"
    assert settings["Labels"]["org.opencontainers.image.version"] == REDIS_VERSION
    assert len(manifest(image.layout)["layers"]) == 1


def test_the_root_has_the_servers_and_the_user_owns_its_data_directory(tmp_path: Path) -> None:
    root = unpack(built().layout, tmp_path / "root")
    assert (root / "usr/bin/redis-server").is_symlink()
    assert (root / "usr/bin/redis-cli").is_file()
    assert "redis:x:999:999:" in (root / "etc/passwd").read_text()
    # A shell, as Redis's own image has: manifests start the server through `sh -c`.
    assert (root / "bin/sh").is_symlink() and (root / "bin/sh").resolve().name == "dash"
    assert not (root / "usr/bin/dpkg").exists()
    (layer,) = manifest(built().layout)["layers"]
    blob = built().layout / "blobs" / "sha256" / layer["digest"].split(":", 1)[1]
    with tarfile.open(blob, "r:gz") as tar:
        home = tar.getmember("data")
    assert (home.uid, home.gid, home.mode) == (999, 999, 0o755)
