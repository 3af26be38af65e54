"""The check both images' tests make of the wheels they installed: each RECORD row
names a file the image holds, of the size it gives, and a program's row (outside the
package directory, where a build writes the image's own scripts) its hash too."""

from __future__ import annotations

import csv
from pathlib import Path

from hack.image.python import record_hash


def record_mismatches(site: Path) -> list[str]:
    """Each RECORD row under ``site`` (a ``dist-packages``) the image does not bear out."""
    found = []
    for record in sorted(site.glob("*.dist-info/RECORD")):
        for row in csv.reader(record.read_text().splitlines()):
            name, digest, size = [*row, "", ""][:3]
            path = site / name
            where = f"{record.relative_to(site)}: {name}"
            if not path.is_file():
                found.append(f"{where} is not in the image")
            elif size and path.stat().st_size != int(size):
                found.append(f"{where} has {path.stat().st_size} bytes, RECORD says {size}")
            elif name.startswith("../") and digest:
                actual = record_hash(path.read_bytes())
                if actual != digest:
                    found.append(f"{where} hashes to {actual}, RECORD says {digest}")
    return found
