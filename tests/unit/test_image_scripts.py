"""The programs a wheel installs, as the Ray image lays them out (``hack.image.python.
install_scripts``): console scripts written again for the image's interpreter, other
programs moved, and each distribution's RECORD naming them where they now are, with
their hashes. The RECORD used to keep pip's rows, whose hashes were of scripts with the
build's own interpreter in the shebang, so the image's digest changed with the path of
the checkout that built it (found when a kept build from one clone and a fresh one in
another differed in that file alone)."""

from __future__ import annotations

import csv
from pathlib import Path

from hack.image.python import SITE_DIR, install_scripts, record_hash

BIN_DIR = "usr/local/bin"


def pip_installed(tree: Path, interpreter: str) -> None:
    """What ``pip install --target`` leaves: a script with ``interpreter`` in its
    shebang, a compiled program, and RECORD rows for both relative to pip's own dir."""
    site = tree / SITE_DIR
    info = site / "tool-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "entry_points.txt").write_text("[console_scripts]\ntool = tool.cli:main\n")
    pip_bin = site / "bin"
    pip_bin.mkdir()
    script = pip_bin / "tool"
    script.write_text(f"#!{interpreter}\nfrom tool.cli import main\nmain()\n")
    (pip_bin / "helper").write_bytes(b"\x7fELF compiled")
    rows = [["tool/__init__.py", "sha256=abc", "1"]]
    for program in sorted(pip_bin.iterdir()):
        rows.append([f"../../bin/{program.name}", record_hash(program.read_bytes()),
                     str(program.stat().st_size)])  # fmt: skip
    rows.append(["tool-1.0.dist-info/RECORD", "", ""])
    with (info / "RECORD").open("w", newline="") as stream:
        csv.writer(stream, lineterminator="\n").writerows(rows)


def record(tree: Path) -> list[list[str]]:
    text = (tree / SITE_DIR / "tool-1.0.dist-info" / "RECORD").read_text()
    return list(csv.reader(text.splitlines()))


def test_the_record_names_each_program_where_the_image_has_it_with_its_hash(
    tmp_path: Path,
) -> None:
    tree = tmp_path / "tree"
    pip_installed(tree, "/home/someone/checkout/.venv/bin/python")
    assert install_scripts(tree, BIN_DIR) == ["helper", "tool"]
    rows = {row[0]: row for row in record(tree)}
    for name in ("helper", "tool"):
        program = tree / BIN_DIR / name
        data = program.read_bytes()
        assert rows[f"../../../local/bin/{name}"][1:] == [record_hash(data), str(len(data))]
    assert (tree / BIN_DIR / "tool").read_text().startswith("#!/usr/bin/python3.11\n")
    assert "tool/__init__.py" in rows and "tool-1.0.dist-info/RECORD" in rows


def test_where_the_build_ran_leaves_no_trace(tmp_path: Path) -> None:
    """Two checkouts at paths of different lengths give the same bytes."""
    trees = []
    for index, interpreter in enumerate(("/a/.venv/bin/python", "/tmp/ci-clone/.venv/bin/python")):
        tree = tmp_path / str(index)
        pip_installed(tree, interpreter)
        install_scripts(tree, BIN_DIR)
        trees.append(tree)
    assert record(trees[0]) == record(trees[1])
    for name in ("helper", "tool"):
        assert (trees[0] / BIN_DIR / name).read_bytes() == (trees[1] / BIN_DIR / name).read_bytes()
