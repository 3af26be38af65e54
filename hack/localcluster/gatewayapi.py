"""The Gateway API CRDs (``gateway.networking.k8s.io`` v1 Gateway and HTTPRoute, standard
channel) that a RayService's incremental upgrade creates objects of.

They come from the Go module ``sigs.k8s.io/gateway-api``, pinned by the wrapper module
``gomod/gateway-api`` (its go.sum holds the module's hash, so a download is verified),
at the version KubeRay v1.7.0 builds against. The two files are about 470 kB, so they
are not committed: like the control-plane binaries they are build inputs, copied once
from the module into ``<cache>/gateway-api/<stamp>/`` (``make localcluster``) and read
from there; the sandbox, which has no network, finds them or fails naming that target.

Only the CRDs are installed: no gateway implementation runs, so tests write the status a
gateway controller would (Gateway Accepted/Programmed, HTTPRoute ``status.parents``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Final

from hack import gobuild
from hack.localcluster import versions

FAMILY: Final = "gateway-api"
WRAPPER: Final = "gateway-api"
GOMOD_DIR: Final = Path(__file__).resolve().parent / "gomod"
RECIPE_REVISION: Final = 1
"""Bump when the copy steps change in a way the wrapper digest cannot see."""
STANDARD_DIR: Final = "config/crd/standard"
CRD_FILES: Final = (
    "gateway.networking.k8s.io_gateways.yaml",
    "gateway.networking.k8s.io_httproutes.yaml",
)
CRD_NAMES: Final = ("gateways.gateway.networking.k8s.io", "httproutes.gateway.networking.k8s.io")


def crd_set() -> gobuild.Built:
    """The CRD files for the current pin, present or not (``bin/`` holds the files, as
    it holds binaries for the other families)."""
    version = versions.CRD_MODULES[WRAPPER][1]
    digest = gobuild.wrapper_digest(GOMOD_DIR, [WRAPPER], f"recipe {RECIPE_REVISION}")
    return gobuild.Built(
        root=gobuild.cache_root() / FAMILY / f"{version}-{digest}", binaries=CRD_FILES
    )


def _module_dir() -> Path:
    """Download the pinned module (verified against the wrapper's go.sum) and return
    where the Go module cache unpacked it."""
    module, version = versions.CRD_MODULES[WRAPPER]
    found = subprocess.run(
        [gobuild.go(), "mod", "download", "-json", f"{module}@{version}"],
        cwd=GOMOD_DIR / WRAPPER, env=gobuild.go_env(), capture_output=True, text=True,
    )  # fmt: skip
    if found.returncode != 0:
        raise RuntimeError(f"go mod download {module}@{version} failed: {found.stderr.strip()}")
    return Path(json.loads(found.stdout)["Dir"])


def _copy(bin_dir: Path) -> None:
    source = _module_dir() / STANDARD_DIR
    for name in CRD_FILES:
        shutil.copyfile(source / name, bin_dir / name)


def ensure_crds(*, force: bool = False) -> list[Path]:
    """The two CRD files, copied from the module unless the cache holds this pin."""
    module, version = versions.CRD_MODULES[WRAPPER]
    built = gobuild.ensure(
        crd_set(),
        family=FAMILY,
        build=_copy,
        versions_text=f"{module} {version} {STANDARD_DIR}\n",
        force=force,
        make_target="localcluster",
        expected="a few seconds",
    )
    return [built.path(name) for name in CRD_FILES]
