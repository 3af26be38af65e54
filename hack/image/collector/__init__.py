"""The stand-in history-server collector image the real node's history-server scenario
runs (``server.py``): not KubeRay's collector, which uploads to a bucket, but a program
that shows what the operator's sidecar contract gives a collector (its env, Ray's logs
in the shared ``/tmp/ray``, Ray's events on ``EVENTS_PORT``).

Two layers: the Ray image's first (Debian bookworm's python3.11, already on the node
under the Ray image, so containerd stores it once) and one holding ``server.py``. Made
at node start from the Ray image's OCI layout, in well under a second: nothing is built
or fetched. It runs as the Ray image's user, as KubeRay's collector sidecar would run
beside a Ray container that owns the shared volume's files.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Final

from hack.image import layers

__all__ = ["COLLECTOR_IMAGE", "SERVER_PATH", "collector_layout"]

COLLECTOR_IMAGE: Final = "registry.invalid/pulumi-ray/history-collector:stand-in"
"""The reference a RayCluster's ``collectorOptions.image`` gives: under ``.invalid``, so
no pull could reach anything, and loaded on the node, so none is tried."""
SERVER_PATH: Final = "opt/collector/server.py"
"""Where ``server.py`` is in the image (relative to its root)."""
_SERVER_SOURCE: Final = Path(__file__).with_name("server.py")
_MANIFEST: Final = "application/vnd.oci.image.manifest.v1+json"
_INDEX: Final = "application/vnd.oci.image.index.v1+json"
_CONFIG: Final = "application/vnd.oci.image.config.v1+json"
_UNCOMPRESSED_LAYER: Final = "application/vnd.oci.image.layer.v1.tar"


def _blob(layout: Path, digest: str) -> Path:
    algorithm, hexdigest = digest.split(":", 1)
    return layout / "blobs" / algorithm / hexdigest


def _read_json(layout: Path, digest: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(_blob(layout, digest).read_bytes())
    return loaded


def _put(layout: Path, data: bytes) -> tuple[str, int]:
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    path = _blob(layout, digest)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return digest, len(data)


def _link_or_copy(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:  # another filesystem
        shutil.copyfile(source, target)


def _server_layer(scratch: Path) -> bytes:
    tree = scratch / "tree"
    destination = tree / SERVER_PATH
    destination.parent.mkdir(parents=True)
    shutil.copyfile(_SERVER_SOURCE, destination)
    layers.write_layer(tree, scratch / "layer.tar")
    return (scratch / "layer.tar").read_bytes()


def collector_layout(ray_layout: Path, out: Path) -> Path:
    """The collector image as an OCI layout at ``out`` (replaced), from the Ray image's
    layout ``ray_layout`` (one single-platform manifest, as ``make ray-image`` writes)."""
    index = json.loads((ray_layout / "index.json").read_text())
    (entry,) = index["manifests"]
    manifest = _read_json(ray_layout, entry["digest"])
    config = _read_json(ray_layout, manifest["config"]["digest"])
    base_layer = manifest["layers"][0]
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    (out / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
    _link_or_copy(_blob(ray_layout, base_layer["digest"]), _blob(out, base_layer["digest"]))
    with tempfile.TemporaryDirectory(prefix=".collector-image-") as scratch:
        layer = _server_layer(Path(scratch))
    layer_digest, layer_size = _put(out, layer)
    base_config = config["config"]
    image_config = {
        "architecture": config["architecture"],
        "os": config["os"],
        "created": config["created"],
        "config": {
            "Cmd": ["python3.11", f"/{SERVER_PATH}"],
            "Env": [e for e in base_config["Env"] if e.split("=", 1)[0] in ("PATH", "LANG")],
            "User": base_config["User"],
            "WorkingDir": "/",
            "Labels": {
                "org.opencontainers.image.title": "history-server collector (stand-in)",
                "org.opencontainers.image.description": (
                    "pulumi-ray's hack/image/collector/server.py on the Ray image's Debian "
                    "base: counts the events Ray posts and lists /tmp/ray; not KubeRay's "
                    "collector"
                ),
            },
        },
        "rootfs": {"type": "layers", "diff_ids": [config["rootfs"]["diff_ids"][0], layer_digest]},
        "history": [
            config["history"][0],
            {"created": config["created"], "created_by": "hack/image/collector/server.py"},
        ],
    }
    config_digest, config_size = _put(out, json.dumps(image_config, sort_keys=True).encode())
    image_manifest = {
        "schemaVersion": 2,
        "mediaType": _MANIFEST,
        "config": {"mediaType": _CONFIG, "digest": config_digest, "size": config_size},
        "layers": [
            base_layer,
            {"mediaType": _UNCOMPRESSED_LAYER, "digest": layer_digest, "size": layer_size},
        ],
    }
    manifest_digest, manifest_size = _put(out, json.dumps(image_manifest).encode())
    image_index = {
        "schemaVersion": 2,
        "mediaType": _INDEX,
        "manifests": [{"mediaType": _MANIFEST, "digest": manifest_digest, "size": manifest_size}],
    }
    (out / "index.json").write_text(json.dumps(image_index))
    return out
