"""Images for the real node's containerd, made here and loaded from files: nothing is
pulled, since no registry is reachable from the sandbox.

- ``pause``: every pod's sandbox container, one static binary built from Kubernetes'
  own ``pause.c`` (``build.py``), loaded under the name containerd asks for
  (``node.SANDBOX_IMAGE``): a stand-in built here, not the registry's image.
- KubeRay's operator, its static binary as the only layer, for side-by-side runs.
- Any OCI layout built here (the operator's from ``make image``), loaded under the
  reference a pod spec gives; with ``imagePullPolicy: IfNotPresent`` the kubelet then
  finds it on the node, by tag or by the manifest's digest.

An OCI layout becomes what ``ctr images import`` reads by a tar of it whose index names
the image (``io.containerd.image.name``).
"""

from __future__ import annotations

import io
import json
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Any, Final

from hack.image import is_artifact, layers
from hack.image.build import ocitool
from hack.node.node import NodeImage

PAUSE_USER: Final = "65535:65535"
"""The pause image's user upstream: nobody, numerically."""
KUBERAY_USER: Final = "65532:65532"
"""The non-root user KubeRay's published image runs as (distroless's ``nonroot``)."""


def fully_qualified(reference: str) -> str:
    """``reference`` as the kubelet asks containerd for it: Docker's normalization, so
    ``rayproject/ray:2.52.1`` is ``docker.io/rayproject/ray:2.52.1`` and ``busybox`` is
    ``docker.io/library/busybox:latest``. containerd stores names as imported, and the
    kubelet never finds an image imported under the short form."""
    first, _, rest = reference.partition("/")
    if not rest:
        reference = f"docker.io/library/{reference}"
    elif "." not in first and ":" not in first and first != "localhost":
        reference = f"docker.io/{reference}"
    if "@" not in reference and ":" not in reference.rsplit("/", 1)[-1]:
        reference += ":latest"
    return reference


def node_image(layout: Path, reference: str, out: Path) -> NodeImage:
    """``layout`` (an OCI image layout with one image) as the node loads it: a tar that
    ``ctr images import`` names ``reference`` (fully qualified), also known by its
    manifest's digest (``REPOSITORY@sha256:...``), the form a stack that pins images
    gives."""
    reference = fully_qualified(reference)
    (manifest,) = _images(json.loads((layout / "index.json").read_text()))
    repository = reference.rsplit("@", 1)[0]
    if ":" in repository.rsplit("/", 1)[-1]:
        repository = repository.rsplit(":", 1)[0]
    pinned = f"{repository}@{manifest['digest']}"
    return NodeImage(import_tar(layout, reference, out), (reference, pinned))


def _images(index: dict[str, Any]) -> list[dict[str, Any]]:
    """The images a layout's index.json names (one manifest, or the operator's
    multi-platform index), without the artifacts beside them (its SBOMs), which
    containerd would otherwise import as images of their own."""
    return [d for d in index["manifests"] if not is_artifact(d)]


def import_tar(layout: Path, reference: str, out: Path) -> Path:
    """``layout`` (an OCI image layout with one image, of one platform or an index of
    several) as a tar ``ctr images import`` names ``reference``."""
    index = json.loads((layout / "index.json").read_text())
    (manifest,) = index["manifests"] = _images(index)
    tag = reference.rsplit(":", 1)[1] if ":" in reference.rsplit("/", 1)[-1] else "latest"
    manifest["annotations"] = {
        **manifest.get("annotations", {}),
        "io.containerd.image.name": reference,
        "org.opencontainers.image.ref.name": tag,
    }
    with tarfile.open(out, "w") as archive:
        archive.add(layout / "oci-layout", "oci-layout")
        named = json.dumps(index).encode()
        info = tarfile.TarInfo("index.json")
        info.size = len(named)
        archive.addfile(info, io.BytesIO(named))
        archive.add(layout / "blobs", "blobs")
    return out


def binary_layout(binary: Path, name: str, out: Path, *, user: str, created_by: str) -> Path:
    """An image of one static binary at ``/NAME``, its entrypoint, as an OCI layout at
    ``out``: the pause image, and KubeRay's operator (a static Go binary: one layer)."""
    with tempfile.TemporaryDirectory(prefix=".binary-image-") as scratch_name:
        scratch = Path(scratch_name)
        tree = scratch / "rootfs"
        tree.mkdir()
        (tree / name).write_bytes(binary.read_bytes())
        (tree / name).chmod(0o755)
        layer = scratch / "layer.tar"
        layers.write_layer(tree, layer)
        spec = {
            "layers": [{"path": str(layer), "created_by": created_by}],
            "config": {"Entrypoint": [f"/{name}"], "User": user},
            "created": "1970-01-01T00:00:00Z",
            "os": "linux",
            "architecture": "amd64",
        }
        (scratch / "spec.json").write_text(json.dumps(spec))
        subprocess.run(
            [str(ocitool()), "assemble", "--spec", str(scratch / "spec.json"),
             "--layout", str(out)],
            check=True, capture_output=True,
        )  # fmt: skip
    return out


def pause_layout(pause_binary: Path, out: Path) -> Path:
    """The pause image: ``/pause`` and nothing else, as upstream's."""
    return binary_layout(pause_binary, "pause", out, user=PAUSE_USER,
                         created_by="pause.c from k8s.io/kubernetes")  # fmt: skip


def kuberay_layout(operator_binary: Path, out: Path) -> Path:
    """KubeRay's operator (``hack.kuberay``) as its chart runs it: ``/manager``, as the
    non-root user of its published image."""
    return binary_layout(
        operator_binary,
        "manager",
        out,
        user=KUBERAY_USER,
        created_by="github.com/ray-project/kuberay/ray-operator (hack/kuberay)",
    )
