"""The random suffixes of the names the operator picks itself: a RayJob's cluster and job
id, a RayService's clusters, a multi-host replica (``<name>-<rand5>``)."""

from __future__ import annotations

import random
from typing import Final

RAND_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"
"""Kubernetes' ``rand.String`` alphabet (no vowels, no look-alike digits)."""
SUFFIX_LENGTH: Final = 5


def random_suffix(rng: random.Random) -> str:
    """Five characters of ``RAND_ALPHABET``, as apimachinery's ``rand.String(5)``."""
    return "".join(rng.choice(RAND_ALPHABET) for _ in range(SUFFIX_LENGTH))


def suffixed(rng: random.Random, name: str) -> str:
    """``<name>-<rand5>``."""
    return f"{name}-{random_suffix(rng)}"
