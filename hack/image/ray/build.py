"""Assemble the Ray image from the cached inputs: locked .debs and locked wheels.

Three layers, the least often changed first: the Debian base, Ray's dependencies, Ray
itself (a Ray upgrade that keeps its dependencies pushes one layer).
Every module has its bytecode, compiled by the image's interpreter: Ray's files belong
to root and the pods run as uid 1000, which could not write a pyc, so each worker would
compile Ray again as it starts.

Nothing in the image depends on this checkout's HEAD: its ``created`` is the time of the
last commit that changed the recipe (this package and the shared machinery), so a commit
elsewhere leaves the digest, and the node's copy of the image, alone.
"""

from __future__ import annotations

from pathlib import Path

from hack.image import ImageBuild, debian
from hack.image.oci import Layer, assemble, building, progress, recipe_date
from hack.image.python import SITE_DIR, base_tree, compile_bytecode, install_scripts
from hack.image.ray import STAND_IN, RayRelease, wheels
from hack.image.user import ImageUser

RAY = ImageUser(
    name="ray", uid=1000, group="users", gid=100,
    home="home/ray", home_mode=0o755, shell="/bin/bash",
)  # fmt: skip
"""Ray's own image's user: ``ray``, uid 1000, home ``/home/ray``."""
BASE = debian.Base(
    lock_file=Path(__file__).resolve().parent / "debian.lock",
    roots=(
        "python3.11",
        "libpython3.11-stdlib",
        "bash",  # KubeRay's containers run /bin/bash -c --
        "coreutils",
        "grep",
        "sed",
        "wget",  # KubeRay's exec probes for Ray < 2.53: wget ... | grep success
        "procps",  # ps, top, free: what `kubectl exec` users reach for
        "libstdc++6",
        "libgcc-s1",
        "ca-certificates",
        "tzdata",
        "netbase",
        "openssl",  # the CLI, as Ray's image has it: KubeRay's TLS sample makes its certs with it
    ),
    excluded={
        **debian.INSTALL_MACHINERY,
        "init-system-helpers": "procps' init scripts' helpers; no init runs in a container",
        "libnsl2": "the nis module (NIS/YP), removed from Python 3.13",
        "libtirpc3": "only through libnsl2",
    },
    user=RAY,
    links={
        "usr/bin/python": "python3.11",
        "usr/bin/python3": "python3.11",
        # No dash: Ray's shell=True subprocesses get bash, as sh.
        "bin/sh": "bash",
    },
    lock_command="python -m hack.image.ray lock",
    providers={"awk": "mawk"},  # base-files' Pre-Depends, as debootstrap picks it
)
BIN_DIR = "usr/local/bin"
"""Where the console scripts (``ray``, ``serve``) and py-spy go: on PATH."""
ENV = (
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG=C.UTF-8",
    # No openssl package, so no /usr/lib/ssl: Python's ssl finds the bundle through this.
    f"SSL_CERT_FILE=/{debian.CA_BUNDLE}",
    # Ray's dashboard gives each of its nine module subprocesses 30 s to start, and
    # itself 60 s to publish its address. Past the first it exits while `ray start`
    # stays up, so the head's probe (which asks the dashboard) fails until the liveness
    # probe restarts the pod ten minutes later: seen on the node tier under make test's
    # load ("Module MetricsHead failed to start. Timeout after 30.0 seconds"). The test
    # heads started on the host get the same (hack/rayhead.py); rayproject/ray sets
    # neither, and a user whose nodes start Ray that slowly sets these two in the pod.
    "RAY_DASHBOARD_STARTUP_TIMEOUT_S=300",
    "RAY_DASHBOARD_SUBPROCESS_MODULE_WAIT_READY_TIMEOUT=300",
)
RECIPE = ("hack/image/ray", *(f"hack/image/{m}.py" for m in ("debian", "layers", "oci", "python")))
"""What the image is made by; the last commit touching it dates the image."""


def image_config(release: RayRelease) -> dict[str, object]:
    extras = ",".join(release.extras)
    return {
        "Cmd": ["/bin/bash"],
        "Env": list(ENV),
        "User": RAY.config,
        "WorkingDir": f"/{RAY.home}",
        "Labels": {
            "org.opencontainers.image.title": (
                f"Ray {release.version} (stand-in for {release.image})"
            ),
            "org.opencontainers.image.description": (
                f"ray[{extras}]=={release.version} on Debian bookworm's python3.11, built "
                "by pulumi-ray's hack/image/ray from the ray wheel; not Ray's published image"
            ),
            "org.opencontainers.image.version": release.version,
        },
    }


def build(out: Path, release: RayRelease = STAND_IN) -> ImageBuild:
    """Assemble ``release``'s image from the cached inputs into ``out`` (its layout and
    facts): the stand-in's Debian base and dependencies, ``release``'s ray."""
    wheels.check_ray_pin()
    deps_dir, locked = wheels.fetch(), wheels.read_lock()
    ray_dir, ray_locked = wheels.fetch(release.ray_lock), wheels.read_lock(release.ray_lock)
    with building(out) as scratch:
        base, deps, ray = scratch / "base", scratch / "deps", scratch / "ray"
        base_tree(BASE, base)
        for tree, wheel_dir, subset in (
            (deps, deps_dir, [w for w in locked if w.name != "ray"]),
            (ray, ray_dir, [w for w in ray_locked if w.name == "ray"]),
        ):
            progress(f"installing {len(subset)} locked wheels into the {tree.name} layer")
            wheels.install(wheel_dir, subset, scratch, tree / SITE_DIR)
            install_scripts(tree, BIN_DIR)
            compile_bytecode(base, tree, SITE_DIR)
        unmet = wheels.unmet_requirements(ray / SITE_DIR, deps / SITE_DIR, release.extras)
        if unmet:
            raise RuntimeError(
                f"ray {release.version}'s requirements that the dependency layer "
                f"(hack/image/ray/python.lock) does not meet: {'; '.join(unmet)}"
            )
        lock_name = release.ray_lock.name
        layers = (
            Layer(base, "Debian bookworm packages (hack/image/ray/debian.lock)"),
            Layer(deps, "ray's dependencies (hack/image/ray/python.lock)"),
            Layer(ray, f"ray {release.version} (hack/image/ray/{lock_name})"),
        )
        return assemble(out, layers, image_config(release), RAY, scratch,
                        recipe_date(RECIPE))  # fmt: skip
