"""cert-manager's controller, built from its Go module, for the RayCluster mTLS tests.

KubeRay's ``RayClusterMTLS`` gate asks cert-manager for an Issuer chain and two leaf
Certificates; its e2e test installs cert-manager v1.19.4. The Go module proxy serves the
root module ``github.com/cert-manager/cert-manager`` at that version but not the nested
module of its ``cmd/controller``, so the wrapper module ``gomod/`` has a ``main.go`` of
our own that starts the controllers mTLS needs from the root module's packages: Issuers
(selfSigned and CA), the Certificate controllers (trigger, key manager, request manager,
issuing, readiness), the CertificateRequest approver and the CA and selfSigned signers.
No webhook (so no defaulting or validation of cert-manager objects beyond the CRDs'
schemas), no cainjector, no ACME.

A build puts in ``<cache>/certmanager/<stamp>/bin/`` the ``cert-manager-controller``
binary and ``crds.yaml``: the four ``cert-manager.io`` CRDs from the module's
``deploy/crds`` (plain YAML in v1.19.4; their specs equal the Helm chart's templates once
the chart's ``{{ }}`` lines are dropped, which the chart uses only for labels and a keep
annotation). ``hack.certmanager.run`` installs and runs them.

A cold build (an empty Go build cache, the modules already downloaded) took 327 s of wall
time under ``nice -n 19`` on two shared cores (2026-11-29); a rebuild after a change to
``main.go`` alone, some 6 s.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from hack import gobuild

FAMILY: Final = "certmanager"
VERSION: Final = "v1.19.4"
MODULE: Final = "github.com/cert-manager/cert-manager"
GOMOD_DIR: Final = Path(__file__).resolve().parent / "gomod"
RECIPE_REVISION: Final = 1
"""Bump when the build steps change in a way the wrapper digest cannot see."""
CRD_FILES: Final = tuple(
    f"deploy/crds/cert-manager.io_{plural}.yaml"
    for plural in ("certificaterequests", "certificates", "clusterissuers", "issuers")
)
"""The cert-manager.io kinds; the acme.cert-manager.io ones (Orders, Challenges) are left
out with the ACME controllers. ClusterIssuers are installed because the CertificateRequest
signers list them (an issuerRef may name either kind)."""
BINARY: Final = "cert-manager-controller"
CRDS_FILE: Final = "crds.yaml"

__all__ = ["VERSION", "ensure_built"]


def _built() -> gobuild.Built:
    digest = gobuild.wrapper_digest(
        GOMOD_DIR.parent,
        ["gomod"],
        f"recipe {RECIPE_REVISION}",
        (GOMOD_DIR / "main.go").read_text(),
    )
    return gobuild.Built(
        root=gobuild.cache_root() / FAMILY / f"cert-manager-{VERSION}-{digest}",
        binaries=(BINARY, CRDS_FILE),
    )


def _build(bin_dir: Path) -> None:
    gobuild.run_go(
        FAMILY,
        f"go build cert-manager {VERSION}",
        ["build", "-trimpath", "-ldflags", "-s -w", "-o", str(bin_dir / BINARY), "."],
        GOMOD_DIR,
    )  # fmt: skip
    source = gobuild.module_dir(MODULE, VERSION, GOMOD_DIR)
    (bin_dir / CRDS_FILE).write_text(
        "".join(
            f"---\n{(source / path).read_text().removeprefix('---').lstrip()}" for path in CRD_FILES
        )
    )


def ensure_built(*, force: bool = False) -> gobuild.Built:
    """Build (or reuse) the controller and copy the CRDs beside it."""
    return gobuild.ensure(
        _built(),
        family=FAMILY,
        build=_build,
        versions_text=f"{MODULE} {VERSION}\n",
        force=force,
        make_target="cert-manager",
        expected="some 5 minutes",
    )
