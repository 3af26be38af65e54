"""The one user an image runs as: what ``/etc/passwd`` and ``/etc/group`` say about it,
and the home directory the layers give it.

Numeric in the image config (``uid:gid``), so a kubelet can check ``runAsNonRoot``
without reading the image's files; named in ``/etc/passwd``, so ``getpwuid`` and
``$HOME`` work inside it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ImageUser:
    name: str
    uid: int
    group: str
    gid: int
    home: str
    """Relative to the root filesystem (``home/nonroot``), as layer entries are named."""
    home_mode: int
    shell: str

    @property
    def config(self) -> str:
        """The image config's ``User``."""
        return f"{self.uid}:{self.gid}"

    def passwd(self) -> str:
        return (
            "root:x:0:0:root:/root:/sbin/nologin\n"
            f"{self.name}:x:{self.uid}:{self.gid}:{self.name}:/{self.home}:{self.shell}\n"
        )

    def group_file(self) -> str:
        return f"root:x:0:\n{self.group}:x:{self.gid}:\n"
