"""The platforms the operator image is built for, and what differs between them.

One entry per architecture: Debian's name for it (which is also the OCI platform's), its
GNU triplet (the multiarch library directories), the kernel's machine name (the wheels'
platform tags) and its dynamic loader. Everything else an image holds is the same
source for every platform: the Python bytecode too, which is compiled once by the build
machine's copy of the same Debian python3.11 (``python.compile_bytecode``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["AMD64", "ARM64", "BUILD", "PLATFORMS", "Platform"]


@dataclass(frozen=True)
class Platform:
    arch: str
    """Debian's architecture name, and the OCI platform's ``architecture``."""
    triplet: str
    """The multiarch directory (``usr/lib/<triplet>``)."""
    machine: str
    """``uname -m``, as manylinux wheel tags spell it."""
    loader: str
    """The dynamic loader, relative to the root filesystem."""


AMD64: Final = Platform("amd64", "x86_64-linux-gnu", "x86_64", "lib64/ld-linux-x86-64.so.2")
ARM64: Final = Platform("arm64", "aarch64-linux-gnu", "aarch64", "lib/ld-linux-aarch64.so.1")
PLATFORMS: Final = (AMD64, ARM64)
"""The operator image's platforms, in the index's order."""
BUILD: Final = AMD64
"""The machine the images are built on: its interpreter compiles every platform's
bytecode, and the other platforms' proof runs under user-mode emulation."""
