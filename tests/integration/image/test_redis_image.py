"""The Redis image ``make redis-image`` built (hack/image/redis): reproducible, non-root,
one layer of the locked Debian packages, with the published image's protected-mode
default. That it serves Ray's GCS is the real node's to
show (tests/node/test_gcs_ft_on_the_node.py)."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from hack.image import ImageBuild, config_document, manifest, root_filesystem, unpack
from hack.image.redis import REDIS_VERSION, built
from hack.image.redis import build as redis_build
from hack.image.run import ContainerRun, image_config, service_account_files
from tests.integration.image.containers import run_to_end
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


_SERVE_AND_ASK = """
{server} &
tries=0
until redis-cli -s /tmp/redis.sock PING >/dev/null 2>&1 || [ "$tries" -ge 20000 ]; do
  tries=$((tries + 1))
done
redis-cli -s /tmp/redis.sock CONFIG GET protected-mode
redis-cli -s /tmp/redis.sock SHUTDOWN NOSAVE
wait
"""
"""A server on a Unix socket (no port, so nothing of the sandbox's network is taken), and
what it says its protected mode is. The image has no ``sleep`` (no coreutils): the wait
for the socket is a bounded loop of pings."""


@pytest.mark.parametrize(("server", "protected"), [
    ("redis-server --port 0 --unixsocket /tmp/redis.sock", "no"),
    ("printf 'port 0\\nunixsocket /tmp/redis.sock\\n' > /tmp/redis.conf; "
     "redis-server /tmp/redis.conf", "no"),
    ("redis-server --port 0 --unixsocket /tmp/redis.sock --protected-mode yes", "yes"),
], ids=["arguments", "config-file", "asked-for"])  # fmt: skip
def test_redis_server_has_the_published_images_protected_mode_off(
    server: str, protected: str, tmp_path: Path
) -> None:
    """Redis's own image builds the server with protected mode off; Debian's default (on)
    refuses every client off loopback while no password is set, which KubeRay's
    password-less GCS FT tests run into. A pod's ``command: [redis-server, ...]`` gets
    the published default; one that asks for it still gets it on."""
    image = built()
    container = ContainerRun(
        root=str(root_filesystem(image)), image=image_config(image.layout),
        command=("sh", "-c", _SERVE_AND_ASK.format(server=server)), args=(), env=(),
        service_account=str(service_account_files(tmp_path / "serviceaccount", {})),
        hostname="redis",
    )  # fmt: skip
    ran = run_to_end(container, tmp_path, "run", timeout=60)
    lines = ran.output.split()
    assert ran.returncode == 0, lines
    assert lines[lines.index("protected-mode") + 1] == protected, lines
