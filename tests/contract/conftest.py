"""One real Ray head for the jobs tests (starting one costs 5-60 s on this machine).

Module-scoped, not session-scoped: a session runs the e2e and integration tiers after
this one, and an idle head's processes would take CPU from them on a 2-core machine.
"""

from __future__ import annotations

from tests.rayhead import module_ray_head, ray_head  # noqa: F401 (fixtures)
