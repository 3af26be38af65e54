"""``make demo`` runs the README's quickstart and ``examples/manifests/rayjob-local.yaml``
on a node that pulls nothing: every Ray container they declare must name the image the
node has loaded (``hack.image.ray.RAY_IMAGE``, the stand-in ``make ray-image`` builds),
at the Ray version inside it, or the demo would wait out its bounds on an image pull."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from hack.image.ray import RAY_IMAGE, RAY_VERSION

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_the_quickstart_names_the_loaded_ray_image_and_its_version() -> None:
    program = (EXAMPLES / "quickstart" / "__main__.py").read_text()
    assert re.findall(r'"image": "([^"]+)"', program) == [RAY_IMAGE]
    assert re.findall(r'ray_version="([^"]+)"', program) == [RAY_VERSION]


def test_the_demo_rayjob_names_the_loaded_ray_image_and_its_version() -> None:
    spec = yaml.safe_load((EXAMPLES / "manifests" / "rayjob-local.yaml").read_text())["spec"]
    cluster = spec["rayClusterSpec"]
    templates = [cluster["headGroupSpec"]["template"]] + [
        group["template"] for group in cluster["workerGroupSpecs"]
    ]
    images = {c["image"] for t in templates for c in t["spec"]["containers"]}
    assert images == {RAY_IMAGE}
    assert cluster["rayVersion"] == RAY_VERSION
