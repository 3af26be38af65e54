"""One real Ray head for the jobs tests (starting one costs 5-60 s on this machine).

Module-scoped, not session-scoped: a session runs the e2e and integration tiers after
this one, and an idle head's processes would take CPU from them on a 2-core machine.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hack.rayhead import RayHead, start_ray_head


@pytest.fixture(scope="module")
def ray_head() -> Iterator[RayHead]:
    head = start_ray_head()
    print(f"\nRay head: dashboard answered {head.started_in:.1f} s after `ray start`")
    try:
        yield head
    finally:
        head.stop()
