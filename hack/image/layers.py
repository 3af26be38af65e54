"""Deterministic layer tars: the same tree always gives the same bytes.

Entries are sorted (parents first), every mtime is ``MTIME`` (not the source date, so a
new commit leaves the Debian and dependency layers' digests alone), owners are numeric
root (the image user's home excepted) with no user or group names, and modes are
normalised from the executable bit, so the umask of the machine that built the tree does
not show.
"""

from __future__ import annotations

import os
import stat
import tarfile
from collections.abc import Mapping
from pathlib import Path

from hack.image.user import ImageUser

MTIME = 0
SPECIAL_MODES: Mapping[str, int] = {"tmp": 0o1777, "root": 0o700}


def _entries(tree: Path) -> list[Path]:
    found = [Path(d, n) for d, dirs, files in os.walk(tree) for n in (*dirs, *files)]
    return sorted(found, key=lambda p: p.relative_to(tree).parts)


def write_layer(tree: Path, out: Path, user: ImageUser | None = None) -> int:
    """Write ``tree`` as an uncompressed tar at ``out``; return its regular files' bytes.
    ``user``'s home, if the tree has it, is the one entry not owned by root."""
    modes = {**SPECIAL_MODES, **({user.home: user.home_mode} if user else {})}
    owners = {user.home: (user.uid, user.gid)} if user else {}
    unpacked = 0
    first_names: dict[tuple[int, int], str] = {}
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as archive:
        for path in _entries(tree):
            name = path.relative_to(tree).as_posix()
            status = path.lstat()
            info = tarfile.TarInfo(name)
            info.mtime = MTIME
            info.uid, info.gid = owners.get(name, (0, 0))
            info.uname = info.gname = ""
            if stat.S_ISLNK(status.st_mode):
                info.type = tarfile.SYMTYPE
                info.linkname = os.readlink(path)
                info.mode = 0o777
                archive.addfile(info)
            elif stat.S_ISDIR(status.st_mode):
                info.type = tarfile.DIRTYPE
                info.mode = modes.get(name, 0o755)
                archive.addfile(info)
            elif stat.S_ISREG(status.st_mode):
                info.mode = 0o755 if status.st_mode & 0o111 else 0o644
                inode = (status.st_dev, status.st_ino)
                if status.st_nlink > 1 and inode in first_names:
                    info.type = tarfile.LNKTYPE
                    info.linkname = first_names[inode]
                    archive.addfile(info)
                    continue
                first_names[inode] = name
                info.size = status.st_size
                unpacked += status.st_size
                with path.open("rb") as content:
                    archive.addfile(info, content)
            else:
                raise RuntimeError(f"{path}: not a file, directory or symlink; a layer holds none")
    return unpacked
