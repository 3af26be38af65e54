"""Assemble the Redis image from the locked .debs: one layer, no interpreter.

Nothing in the image depends on this checkout's HEAD: its ``created`` is the time of the
last commit that changed the recipe (this package and the shared machinery), so a commit
elsewhere leaves the digest, and the node's copy of the image, alone.
"""

from __future__ import annotations

from pathlib import Path

from hack.image import ImageBuild, debian
from hack.image.oci import Layer, assemble, building, progress, recipe_date
from hack.image.redis import REDIS_IMAGE, REDIS_VERSION
from hack.image.user import ImageUser

REDIS = ImageUser(
    name="redis", uid=999, group="redis", gid=999,
    home="data", home_mode=0o755, shell="/usr/sbin/nologin",
)  # fmt: skip
"""Redis's own image's user: ``redis``, 999:999, and its data directory, ``/data`` (the
working directory there too), which manifests written for that image name in their
``redis.conf`` (``dir /data``, as KubeRay's samples do)."""
BASE = debian.Base(
    lock_file=Path(__file__).resolve().parent / "debian.lock",
    roots=(
        "redis-server",
        "redis-tools",  # redis-cli, what a test or a user reads the keys with
        "ca-certificates",  # what redis-cli --tls verifies against (and extract() bundles)
        # /bin/sh: Redis's own image has one, and manifests start the server through it
        # (KubeRay's samples run `sh -c "redis-server /usr/local/etc/redis/redis.conf"`).
        "dash",
    ),
    excluded={
        **debian.INSTALL_MACHINERY,
        "adduser": "its postinst makes the redis user; the image's /etc/passwd is written here",
        "passwd": "only through adduser",
        "lsb-base": "init scripts' helpers; no init runs in a container",
        "init-system-helpers": "the same, for the systemd unit and init script",
        "openssl": "the CLI; redis links libssl3, and the bundle is made here",
    },
    user=REDIS,
    links={"bin/sh": "dash"},
    lock_command="python -m hack.image.redis lock",
)
COMMAND = ("redis-server", "--bind", "0.0.0.0", "::", "--dir", f"/{REDIS.home}")
"""No config file: Debian's ``/etc/redis/redis.conf`` daemonizes and binds loopback."""
SERVER_WRAPPER = "usr/local/bin/redis-server"
"""First on PATH, so a pod's ``command: [redis-server, ...]`` runs it."""
SERVER_WRAPPER_SCRIPT = """#!/bin/sh
# Redis's own image builds redis-server with protected mode off by default (a container
# is reached over its pod network, never loopback); Debian's has it on, which refuses
# every remote client while no password is set. This gives the server the published
# image's default. A config file stays the first argument, and a --protected-mode
# given later on the line still wins. Queries of the binary itself pass straight on.
case "$1" in
  -v|--version|-h|--help|--test-memory|--check-system) exec /usr/bin/redis-server "$@" ;;
  ""|--*) exec /usr/bin/redis-server --protected-mode no "$@" ;;
  *) config="$1"; shift; exec /usr/bin/redis-server "$config" --protected-mode no "$@" ;;
esac
"""
ENV = ("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8")
RECIPE = ("hack/image/redis", *(f"hack/image/{m}.py" for m in ("debian", "layers", "oci")))
"""What the image is made by; the last commit touching it dates the image."""


def check_version(packages: list[debian.Package]) -> None:
    """The locked redis-server is ``REDIS_VERSION`` (epoch and Debian revision aside)."""
    locked = {p.name: p.version for p in packages}.get("redis-server", "")
    upstream = locked.split(":", 1)[-1].split("-", 1)[0]
    if upstream != REDIS_VERSION:
        raise RuntimeError(
            f"hack/image/redis/debian.lock has redis-server {locked or 'none'}, but "
            f"REDIS_VERSION is {REDIS_VERSION}: set it in hack/image/redis/__init__.py"
        )


def image_config() -> dict[str, object]:
    return {
        "Cmd": list(COMMAND),
        "Env": list(ENV),
        "User": REDIS.config,
        "WorkingDir": f"/{REDIS.home}",
        "ExposedPorts": {"6379/tcp": {}},
        "Labels": {
            "org.opencontainers.image.title": f"Redis {REDIS_VERSION} (stand-in for {REDIS_IMAGE})",
            "org.opencontainers.image.description": (
                "Debian bookworm's redis-server and redis-tools, built by pulumi-ray's "
                "hack/image/redis from the .debs; not Redis's published image"
            ),
            "org.opencontainers.image.version": REDIS_VERSION,
        },
    }


def build(out: Path) -> ImageBuild:
    """Assemble the image from the cached .debs into ``out`` (its layout and facts)."""
    packages = debian.read_lock(BASE.lock_file)
    check_version(packages)
    debs = debian.fetch(packages, refresh=BASE.refresh)
    with building(out) as scratch:
        tree = scratch / "base"
        progress(f"extracting {len(debs)} Debian packages")
        debian.extract(debs, tree, BASE)
        wrapper = tree / SERVER_WRAPPER
        wrapper.parent.mkdir(parents=True, exist_ok=True)
        wrapper.write_text(SERVER_WRAPPER_SCRIPT)
        wrapper.chmod(0o755)
        layers = (Layer(tree, "Debian bookworm packages (hack/image/redis/debian.lock)"),)
        return assemble(out, layers, image_config(), REDIS, scratch, recipe_date(RECIPE))
