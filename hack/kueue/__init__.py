"""Kueue's controller manager, built from its Go module, for the batch-scheduling tests.

``sigs.k8s.io/kueue`` is pinned by the wrapper module ``gomod/`` (its go.sum holds every
hash). A build puts three files in ``<cache>/kueue/<stamp>/bin/``: the ``kueue`` binary
(``cmd/kueue``), ``crds.yaml`` (the module's ``config/components/crd/bases``, the CRDs a
release installs) and ``webhooks.yaml`` (``config/components/webhook/manifests.yaml``,
the admission webhooks it registers). ``hack.kueue.run`` installs and runs them on the
local control plane.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from hack import gobuild

FAMILY: Final = "kueue"
VERSION: Final = "v0.17.0"
MODULE: Final = "sigs.k8s.io/kueue"
GOMOD_DIR: Final = Path(__file__).resolve().parent / "gomod"
RECIPE_REVISION: Final = 1
"""Bump when the build steps change in a way the wrapper digest cannot see."""
CRD_BASES: Final = "config/components/crd/bases"
WEBHOOK_MANIFEST: Final = "config/components/webhook/manifests.yaml"
BINARY: Final = "kueue"
CRDS_FILE: Final = "crds.yaml"
WEBHOOKS_FILE: Final = "webhooks.yaml"

__all__ = ["VERSION", "ensure_built"]


def _built() -> gobuild.Built:
    digest = gobuild.wrapper_digest(GOMOD_DIR.parent, ["gomod"], f"recipe {RECIPE_REVISION}")
    return gobuild.Built(
        root=gobuild.cache_root() / FAMILY / f"kueue-{VERSION}-{digest}",
        binaries=(BINARY, CRDS_FILE, WEBHOOKS_FILE),
    )


def _build(bin_dir: Path) -> None:
    gobuild.run_go(
        FAMILY,
        f"go build kueue {VERSION}",
        ["build", "-trimpath", "-ldflags", _ldflags(), "-o", str(bin_dir / BINARY),
         f"{MODULE}/cmd/kueue"],
        GOMOD_DIR,
    )  # fmt: skip
    source = gobuild.module_dir(MODULE, VERSION, GOMOD_DIR)
    crds = sorted((source / CRD_BASES).glob("*.yaml"))
    if not crds:
        raise RuntimeError(f"no CRDs under {source / CRD_BASES}")
    (bin_dir / CRDS_FILE).write_text(
        "".join(f"---\n{path.read_text().removeprefix('---').lstrip()}" for path in crds)
    )
    (bin_dir / WEBHOOKS_FILE).write_text((source / WEBHOOK_MANIFEST).read_text())


def _ldflags() -> str:
    return f"-s -w -X {MODULE}/pkg/version.GitVersion={VERSION}"


def ensure_built(*, force: bool = False) -> gobuild.Built:
    """Build (or reuse) Kueue's binary and copy its CRDs and webhook manifest."""
    return gobuild.ensure(
        _built(),
        family=FAMILY,
        build=_build,
        versions_text=f"{MODULE} {VERSION}\n",
        force=force,
        make_target="kueue",
        expected="several minutes",
    )
