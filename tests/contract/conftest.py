"""One real Ray head for the jobs tests (starting one costs 5-60 s on this machine):
module-scoped, handed on to the worker's next module that wants one (``tests/rayhead.py``).
"""

from __future__ import annotations

from tests.rayhead import module_ray_head, ray_head  # noqa: F401 (fixtures)
