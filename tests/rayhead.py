"""The tests' real Ray head: ``hack/rayhead.py`` (``make demo`` starts one too)."""

from hack.rayhead import RayHead, start_ray_head

__all__ = ["RayHead", "start_ray_head"]
