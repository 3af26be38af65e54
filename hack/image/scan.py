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

from hack.image.tools import PinnedTool

__all__ = ["SYFT", "FoundPackage", "packages"]

SYFT = PinnedTool(
    name="syft",
    wrapper=Path(__file__).resolve().parent / "syftmod",
    module="github.com/anchore/syft",
    version="v1.57.1",
    package="github.com/anchore/syft/cmd/syft",
    recipe_revision=1,
    expected="some ten minutes on two cores",
)
SCAN_SECONDS = 600


@dataclass(frozen=True, order=True)
class FoundPackage:
    type: str
    """syft's package type: ``deb``, ``python``, ..."""
    name: str
    version: str
    purl: str


def packages(layout: Path, arch: str, workdir: Path) -> list[FoundPackage]:
    """What syft finds in ``layout``'s linux/``arch`` image, offline."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(workdir),
        "TMPDIR": str(workdir),
        "SYFT_CHECK_FOR_APP_UPDATE": "false",
    }
    completed = subprocess.run(
        [str(SYFT.binary()), "scan", f"oci-dir:{layout}", "--platform", f"linux/{arch}",
         "--output", "syft-json", "--quiet"],
        env=env, capture_output=True, text=True, timeout=SCAN_SECONDS,
    )  # fmt: skip
    if completed.returncode != 0:
        raise RuntimeError(f"syft failed on linux/{arch}: {completed.stderr[-3000:]}")
    found = json.loads(completed.stdout)["artifacts"]
    return sorted(
        FoundPackage(a["type"], a["name"], a["version"], a.get("purl", "")) for a in found
    )
