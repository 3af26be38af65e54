"""The operator image as a security review reads it (hack/image/sbom.py, scan.py): a
dpkg status entry per Debian package, an SPDX SBOM per platform beside the layout and
attached to its image as a referrer, and a real scanner's package detection (syft's
catalogers, offline) finding every package the SBOM lists.

Detection only: no vulnerability database can be had here (scan.py says why).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hack.image import ImageBuild, built, is_artifact, manifest, root_filesystem
from hack.image.build import sbom_path
from hack.image.debian import OPERATOR, STATUS_DIR, read_lock
from hack.image.platform import PLATFORMS, Platform
from hack.image.scan import packages

SITE_DIR = "usr/lib/python3/dist-packages"


@pytest.fixture(scope="module")
def image() -> ImageBuild:
    return built()


def _sbom(image: ImageBuild, platform: Platform) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(sbom_path(image.layout.parent, platform).read_text())
    return document


def _purls(document: dict[str, Any], prefix: str) -> set[str]:
    return {
        ref["referenceLocator"]
        for package in document["packages"]
        for ref in package["externalRefs"]
        if ref["referenceLocator"].startswith(prefix)
    }


@pytest.mark.parametrize("platform", PLATFORMS, ids=lambda p: p.arch)
def test_each_debian_package_has_its_status_entry(image: ImageBuild, platform: Platform) -> None:
    rootfs = root_filesystem(image, None if platform.arch == "amd64" else platform.arch)
    locked = {p.name: p.version for p in read_lock(OPERATOR.lock_path(platform.arch))}
    entries = {}
    for entry in sorted((rootfs / STATUS_DIR).iterdir()):
        fields = dict(
            line.split(": ", 1) for line in entry.read_text().splitlines() if ": " in line
        )
        assert fields["Package"] == entry.name
        assert fields["Architecture"] in (platform.arch, "all")
        entries[entry.name] = fields["Version"]
    assert entries == locked
    # Scanners read status.d; a package manager would need the database, which stays out.
    assert not (rootfs / "var/lib/dpkg/status").exists()


@pytest.mark.parametrize("platform", PLATFORMS, ids=lambda p: p.arch)
def test_the_sbom_lists_every_debian_and_python_package(
    image: ImageBuild, platform: Platform
) -> None:
    document = _sbom(image, platform)
    assert document["spdxVersion"] == "SPDX-2.3"
    debs = {
        f"pkg:deb/debian/{p.name}@{p.version.replace(':', '%3A').replace('+', '%2B')}"
        f"?arch={p.arch}&distro=debian-12"
        for p in read_lock(OPERATOR.lock_path(platform.arch))
    }
    assert _purls(document, "pkg:deb/") == debs
    rootfs = root_filesystem(image, None if platform.arch == "amd64" else platform.arch)
    installed = {
        path.name.removesuffix(".dist-info").split("-")[0].lower().replace("_", "-")
        for path in (rootfs / SITE_DIR).glob("*.dist-info")
    }
    listed = {purl.split("/", 1)[1].split("@")[0] for purl in _purls(document, "pkg:pypi/")}
    assert listed == installed
    wheels = [p for p in document["packages"] if p["externalRefs"][0]["referenceLocator"]
              .startswith("pkg:pypi/") and p["name"] != "pulumi-ray"]  # fmt: skip
    assert all(p.get("checksums") for p in wheels), "a wheel without its sha256"


def test_each_sbom_is_a_referrer_of_its_platforms_image(image: ImageBuild) -> None:
    layout = image.layout
    index = json.loads((layout / "index.json").read_text())
    artifacts = [d for d in index["manifests"] if is_artifact(d)]
    assert len(artifacts) == len(PLATFORMS)
    subjects = {}
    for descriptor in artifacts:
        assert descriptor["artifactType"] == "application/spdx+json"
        artifact = json.loads(
            (layout / "blobs/sha256" / descriptor["digest"].split(":")[1]).read_bytes()
        )
        (layer,) = artifact["layers"]
        content = (layout / "blobs/sha256" / layer["digest"].split(":")[1]).read_bytes()
        subjects[artifact["subject"]["digest"]] = content
    for platform in PLATFORMS:
        digest = image.platform(platform.arch).digest
        assert subjects[digest] == sbom_path(layout.parent, platform).read_bytes()
        assert manifest(layout, platform.arch)["config"]  # the subject is a real image


@pytest.mark.parametrize("platform", PLATFORMS, ids=lambda p: p.arch)
def test_a_real_scanner_finds_every_package_the_sbom_lists(
    image: ImageBuild, platform: Platform, tmp_path: Path
) -> None:
    found = packages(image.layout, platform.arch, tmp_path)
    document = _sbom(image, platform)
    debs = {(p.name, p.version) for p in found if p.type == "deb"}
    python = {(p.name.lower().replace("_", "-"), p.version) for p in found if p.type == "python"}
    listed_debs = {
        (p["name"], p["versionInfo"]) for p in document["packages"]
        if p["SPDXID"].startswith("SPDXRef-deb-")
    }  # fmt: skip
    listed_python = {
        (p["name"].lower().replace("_", "-"), p["versionInfo"]) for p in document["packages"]
        if p["SPDXID"].startswith("SPDXRef-pypi-")
    }  # fmt: skip
    print(
        f"\nlinux/{platform.arch}: syft found {len(debs)} Debian and {len(python)} Python "
        f"packages; the SBOM lists {len(listed_debs)} and {len(listed_python)}"
    )
    assert debs == listed_debs
    assert python == listed_python
