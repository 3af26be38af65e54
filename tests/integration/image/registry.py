"""The loopback registry the image tests push to: go-containerregistry's in-memory one,
served by ``ocitool serve`` on 127.0.0.1, gone with the process."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator

from hack.image import oci

REGISTRY_STOP_SECONDS = 30.0
"""The in-memory registry exits at SIGTERM at once; this only bounds a wedged one."""


@contextlib.contextmanager
def loopback_registry() -> Iterator[str]:
    """A fresh, empty registry for the ``with`` block: its ``127.0.0.1:port``."""
    with subprocess.Popen(
        [str(oci.ocitool()), "serve"], stdout=subprocess.PIPE, text=True
    ) as server:
        try:
            assert server.stdout is not None
            address = server.stdout.readline().strip()
            assert address.startswith("127.0.0.1:"), f"the registry printed {address!r}"
            yield address
        finally:
            server.terminate()
            server.wait(timeout=REGISTRY_STOP_SECONDS)
