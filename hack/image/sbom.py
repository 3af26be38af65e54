"""The operator image's SBOM: one SPDX 2.3 JSON document per platform.

SPDX rather than CycloneDX: both are read by Trivy (``trivy sbom``), Grype
(``grype sbom:``) and syft, but SPDX is the one the rest of the path speaks too: it is an
ISO standard (ISO/IEC 5962), BuildKit's SBOM attestations are SPDX, and sigstore's
``cosign attest --type spdxjson`` and registries' SBOM views take it. The document is
attached to its platform's image as an OCI referrer (``oci.assemble_index``) and written
beside the layout (``dist/image/sbom-<arch>.spdx.json``).

It is written from what the build itself put into the image, not from a scan: the
Debian packages of the platform's lock (with each .deb's sha256 and mirror URL) and the
Python distributions installed in its trees (each wheel's sha256, from
requirements.lock's downloads), plus the operator itself. Package URLs (purl) name each
one as vulnerability databases key them. The same inputs give the same bytes: the
namespace is a digest of the content and ``created`` is the image's.
"""

from __future__ import annotations

import hashlib
import json
import re
import urllib.parse
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from email.parser import HeaderParser
from pathlib import Path

from hack.image.debian import Package

__all__ = ["PythonDistribution", "document", "python_distributions"]

DEBIAN_DISTRO = "debian-12"
NOASSERTION = "NOASSERTION"


@dataclass(frozen=True)
class PythonDistribution:
    name: str
    version: str
    sha256: str | None
    """The installed wheel's, where the build downloaded one."""


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def python_distributions(site: Path, wheels: Path | None) -> list[PythonDistribution]:
    """The distributions installed under ``site`` (their dist-info METADATA), each with
    the sha256 of its wheel in ``wheels`` if there is one."""
    hashes = {}
    for wheel in sorted(wheels.glob("*.whl")) if wheels else ():
        name, version = wheel.name.split("-")[:2]
        hashes[(_normalized(name), version)] = hashlib.sha256(wheel.read_bytes()).hexdigest()
    found = []
    for metadata in sorted(site.glob("*.dist-info/METADATA")):
        headers = HeaderParser().parsestr(metadata.read_text())
        name, version = headers["Name"], headers["Version"]
        found.append(PythonDistribution(name, version, hashes.get((_normalized(name), version))))
    return found


def _identifier(kind: str, name: str) -> str:
    return f"SPDXRef-{kind}-" + re.sub(r"[^A-Za-z0-9.-]", "-", name)


def _package(
    identifier: str, name: str, version: str, purl: str, supplier: str,
    sha256: str | None = None, download: str = NOASSERTION,
) -> dict[str, object]:  # fmt: skip
    package: dict[str, object] = {
        "SPDXID": identifier,
        "name": name,
        "versionInfo": version,
        "supplier": supplier,
        "downloadLocation": download,
        "filesAnalyzed": False,
        "licenseConcluded": NOASSERTION,
        "licenseDeclared": NOASSERTION,
        "copyrightText": NOASSERTION,
        "externalRefs": [
            {
                "referenceCategory": "PACKAGE-MANAGER",
                "referenceType": "purl",
                "referenceLocator": purl,
            },
        ],
    }
    if sha256:
        package["checksums"] = [{"algorithm": "SHA256", "checksumValue": sha256}]
    return package


def document(
    *, arch: str, image_name: str, version: str, created: datetime,
    debian: Sequence[Package], python: Sequence[PythonDistribution],
) -> bytes:  # fmt: skip
    """The SPDX JSON document of one platform's image."""
    root = "SPDXRef-image"
    packages: list[dict[str, object]] = [
        {
            **_package(root, image_name, version,
                       f"pkg:oci/{image_name}?arch={arch}", "Organization: pulumi-ray"),
            "primaryPackagePurpose": "CONTAINER",
        },
    ]  # fmt: skip
    for deb in sorted(debian, key=lambda p: p.name):
        quoted = urllib.parse.quote(deb.version, safe="")
        purl = f"pkg:deb/debian/{deb.name}@{quoted}?arch={deb.arch}&distro={DEBIAN_DISTRO}"
        packages.append(
            _package(
                _identifier("deb", deb.name),
                deb.name,
                deb.version,
                purl,
                "Organization: Debian",
                deb.sha256,
                deb.url,
            )
        )
    for dist in sorted(python, key=lambda d: _normalized(d.name)):
        purl = f"pkg:pypi/{_normalized(dist.name)}@{dist.version}"
        packages.append(
            _package(
                _identifier("pypi", _normalized(dist.name)),
                dist.name,
                dist.version,
                purl,
                NOASSERTION,
                dist.sha256,
            )
        )
    relationships = [
        {"spdxElementId": "SPDXRef-DOCUMENT", "relationshipType": "DESCRIBES",
         "relatedSpdxElement": root},
        *({"spdxElementId": root, "relationshipType": "CONTAINS",
           "relatedSpdxElement": p["SPDXID"]} for p in packages[1:]),
    ]  # fmt: skip
    body: dict[str, object] = {
        "spdxVersion": "SPDX-2.3",
        "dataLicense": "CC0-1.0",
        "SPDXID": "SPDXRef-DOCUMENT",
        "name": f"{image_name}-{version}-linux-{arch}",
        "creationInfo": {
            "created": created.isoformat().replace("+00:00", "Z"),
            "creators": ["Tool: pulumi-ray hack.image"],
        },
        "packages": packages,
        "relationships": relationships,
    }
    content = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
    body["documentNamespace"] = f"urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, content)}"
    return (json.dumps(body, indent=2) + "\n").encode()
