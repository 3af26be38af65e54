"""A real scanner's view of the operator image: syft's package catalogers.

Trivy and Grype find vulnerabilities by first listing an image's packages; syft is the
cataloger Grype runs, and the one tool of the three whose package detection can be had
here (built from its Go module, ``syftmod/``, like every other tool of this project).
A vulnerability database cannot: Grype's and Trivy's are downloaded from their own
servers (Anchore's CDN, ghcr.io), which are not reachable where this project is built,
so the image test checks detection (every Debian and Python package found, as the SBOM
lists them) and not matching.

``packages()`` runs syft over one platform of the OCI layout, offline (no update check,
no network), and returns what it found.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from hack import gobuild
from hack.image.oci import FAMILY

__all__ = ["SYFT_MODULE", "SYFT_VERSION", "FoundPackage", "packages", "syft"]

GOMOD_DIR = Path(__file__).resolve().parent / "syftmod"
SYFT_MODULE = "github.com/anchore/syft"
SYFT_VERSION = "v1.57.1"
"""What syftmod/go.mod requires (tests/unit/test_image_pins.py holds them together)."""
RECIPE_REVISION = 1
SCAN_SECONDS = 600


@dataclass(frozen=True, order=True)
class FoundPackage:
    type: str
    """syft's package type: ``deb``, ``python``, ..."""
    name: str
    version: str
    purl: str


def _built() -> gobuild.Built:
    digest = gobuild.wrapper_digest(GOMOD_DIR.parent, [GOMOD_DIR.name], f"recipe {RECIPE_REVISION}")
    return gobuild.Built(root=gobuild.cache_root() / FAMILY / f"syft-{digest}", binaries=("syft",))


def syft() -> Path:
    """The syft binary, built once from the pinned wrapper module (a few minutes)."""

    def build(bin_dir: Path) -> None:
        gobuild.run_go(
            FAMILY,
            "go build syft",
            ["build", "-trimpath", "-ldflags", "-s -w", "-o", str(bin_dir / "syft"),
             "github.com/anchore/syft/cmd/syft"],
            GOMOD_DIR,
        )  # fmt: skip

    built = gobuild.ensure(
        _built(),
        family=FAMILY,
        build=build,
        versions_text=f"{SYFT_MODULE} {SYFT_VERSION} (hack/image/syftmod/go.mod)\n",
        make_target="image",
        expected="some ten minutes on two cores",
    )
    return built.path("syft")


def packages(layout: Path, arch: str, workdir: Path) -> list[FoundPackage]:
    """What syft finds in ``layout``'s linux/``arch`` image, offline."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(workdir),
        "TMPDIR": str(workdir),
        "SYFT_CHECK_FOR_APP_UPDATE": "false",
    }
    completed = subprocess.run(
        [str(syft()), "scan", f"oci-dir:{layout}", "--platform", f"linux/{arch}",
         "--output", "syft-json", "--quiet"],
        env=env, capture_output=True, text=True, timeout=SCAN_SECONDS,
    )  # fmt: skip
    if completed.returncode != 0:
        raise RuntimeError(f"syft failed on linux/{arch}: {completed.stderr[-3000:]}")
    found = json.loads(completed.stdout)["artifacts"]
    return sorted(
        FoundPackage(a["type"], a["name"], a["version"], a.get("purl", "")) for a in found
    )
