"""The names the real node imports images under are the names the kubelet asks for."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from hack.node.images import fully_qualified, node_image


@pytest.mark.parametrize(
    ("given", "asked"),
    [
        ("rayproject/ray:2.52.1", "docker.io/rayproject/ray:2.52.1"),
        ("busybox", "docker.io/library/busybox:latest"),
        ("registry.invalid/pulumi-ray/operator:node-tier",
         "registry.invalid/pulumi-ray/operator:node-tier"),
        ("localhost/x", "localhost/x:latest"),
        ("127.0.0.1:5000/ray@sha256:" + "a" * 64, "127.0.0.1:5000/ray@sha256:" + "a" * 64),
        ("kuberay/operator@sha256:" + "b" * 64, "docker.io/kuberay/operator@sha256:" + "b" * 64),
    ],
)  # fmt: skip
def test_references_are_fully_qualified_as_the_kubelet_asks(given: str, asked: str) -> None:
    assert fully_qualified(given) == asked


def test_an_index_layout_is_imported_without_its_sbom_referrers(tmp_path: Path) -> None:
    # The operator's layout names its multi-platform index and, beside it, an SBOM per
    # platform (artifacts): containerd must be handed the index alone, named.
    layout = tmp_path / "oci"
    (layout / "blobs").mkdir(parents=True)
    (layout / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
    index = {"schemaVersion": 2, "manifests": [
        {"mediaType": "application/vnd.oci.image.index.v1+json",
         "digest": "sha256:" + "1" * 64, "size": 1},
        {"mediaType": "application/vnd.oci.image.manifest.v1+json",
         "artifactType": "application/spdx+json", "digest": "sha256:" + "2" * 64, "size": 1},
    ]}  # fmt: skip
    (layout / "index.json").write_text(json.dumps(index))
    image = node_image(layout, "registry.invalid/team/operator:1", tmp_path / "operator.tar")
    assert image.references[1] == "registry.invalid/team/operator@sha256:" + "1" * 64
    with tarfile.open(tmp_path / "operator.tar") as archive:
        member = archive.extractfile("index.json")
        assert member is not None
        imported = json.loads(member.read())
    (only,) = imported["manifests"]
    assert only["digest"] == "sha256:" + "1" * 64
    assert only["annotations"]["io.containerd.image.name"] == "registry.invalid/team/operator:1"


def test_a_single_image_layout_is_imported_whole(tmp_path: Path) -> None:
    # go-containerregistry gives an image's own entry its config's type as artifactType:
    # that is the image (the Ray and Redis layouts), not an artifact to leave out.
    layout = tmp_path / "oci"
    (layout / "blobs").mkdir(parents=True)
    (layout / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
    index = {"schemaVersion": 2, "manifests": [
        {"mediaType": "application/vnd.oci.image.manifest.v1+json",
         "artifactType": "application/vnd.oci.image.config.v1+json",
         "digest": "sha256:" + "3" * 64, "size": 1},
    ]}  # fmt: skip
    (layout / "index.json").write_text(json.dumps(index))
    image = node_image(layout, "redis:7.0.15", tmp_path / "redis.tar")
    assert image.references == (
        "docker.io/library/redis:7.0.15",
        "docker.io/library/redis@sha256:" + "3" * 64,
    )
