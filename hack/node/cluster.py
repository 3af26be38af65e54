"""A local control plane whose only node is real: what the real-node tests and
``make demo`` start.

Images come from files, never from a registry: the pause image built from Kubernetes'
``pause.c``, the operator's from ``make image`` and the Ray stand-in from ``make
ray-image``, each imported under the name the pods ask for.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hack.image import built as operator_image
from hack.image.ray import RAY_IMAGE
from hack.image.ray import built as ray_image
from hack.localcluster import LocalCluster, ensure_built
from hack.localcluster.versions import KUBERNETES
from hack.node import build as node_build
from hack.node import images
from hack.node.node import SANDBOX_IMAGE, NodeImage, RealNode, VolumeProvisioner

CRD_DIR = Path(__file__).resolve().parents[2] / "operator_runtime" / "api" / "crds"


def node_images(directory: Path, operator_reference: str) -> list[NodeImage]:
    """The tars the node loads: pause, the operator's image under ``operator_reference``
    and the Ray image under ``RAY_IMAGE`` (each also under its digest)."""
    pause = images.pause_layout(node_build.ensure_built().path("pause"), directory / "pause")
    return [
        images.node_image(pause, SANDBOX_IMAGE, directory / "pause.tar"),
        images.node_image(operator_image().layout, operator_reference, directory / "operator.tar"),
        images.node_image(ray_image().layout, RAY_IMAGE, directory / "ray.tar"),
    ]


def start_real_node_cluster(state_dir: Path, operator_reference: str,
                            extra: tuple[NodeImage, ...] = (), *,
                            install_crds: bool = True,
                            kubernetes: str = KUBERNETES) -> LocalCluster:  # fmt: skip
    """A control plane with our CRDs (unless not ``install_crds``: ``make demo``'s stack
    installs them, as a user's does) and one real node (no kwok node) that has the
    ``node_images`` and ``extra`` loaded, and a default StorageClass, as kind's node has;
    it dies with this process, and ``stop()`` stops it. The control plane, the kubelet
    and kube-proxy are Kubernetes ``kubernetes`` (the default unless a test asks)."""
    image_dir = state_dir / "images"
    image_dir.mkdir(parents=True, exist_ok=True)
    node = RealNode(
        state_dir=Path(tempfile.mkdtemp(prefix="node-", dir=state_dir)),
        tools=node_build.ensure_kubelet_built(kubernetes),
        images=[*node_images(image_dir, operator_reference), *extra],
        provisioner=VolumeProvisioner(
            binary=node_build.ensure_storage_built().path("local-path-provisioner"),
            helper_image=RAY_IMAGE,
        ),
    )
    cluster = LocalCluster(state_dir=state_dir / "control-plane",
                           tools=ensure_built(kubernetes=kubernetes), kubernetes=kubernetes,
                           die_with_parent=True, real_node=node)  # fmt: skip
    cluster.start(node_count=0, crds=CRD_DIR if install_crds else None)
    return cluster
