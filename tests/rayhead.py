"""The tests' real Ray head (``hack/rayhead.py``; ``make demo`` starts one too) and the
module-scoped fixture the tiers that need one import into their conftest:

    from tests.rayhead import module_ray_head, ray_head  # noqa: F401 (fixtures)

One head per module, not per session: an idle head's processes would take CPU from the
tiers that run after it on a 2-core machine.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hack.rayhead import RayHead, revive, start_ray_head

__all__ = ["RayHead", "ray_head", "start_ray_head"]


@pytest.fixture(scope="module")
def module_ray_head() -> Iterator[RayHead]:
    head = start_ray_head()
    print(f"\nRay head: dashboard answered {head.started_in:.1f} s after `ray start`")
    try:
        yield head
    finally:
        head.stop()


@pytest.fixture
def ray_head(module_ray_head: RayHead) -> RayHead:
    """The module's head, started again first if Ray's processes died (``revive``)."""
    revive(module_ray_head)
    return module_ray_head
