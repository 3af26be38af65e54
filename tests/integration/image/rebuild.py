"""The reproducibility check both images' tests make: assembled again from the cached
inputs, an image has the digest its ``make`` target gave."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from hack.image import ImageBuild, differences


def assert_builds_again_the_same(
    image: ImageBuild, build: Callable[[Path], ImageBuild], out: Path, hint: str
) -> None:
    """``build`` into ``out`` gives ``image`` again; ``hint`` says why it might not."""
    started = time.monotonic()
    again = build(out)
    print(f"assembled again in {time.monotonic() - started:.1f}s")
    if again.digest != image.digest:
        differing = differences(image.layout, again.layout)
        pytest.fail(
            f"a second build gives {again.digest}, the first gave {image.digest}: "
            f"{', '.join(differing) or 'the manifests differ'} ({hint})"
        )
    assert again.unpacked_bytes == image.unpacked_bytes
