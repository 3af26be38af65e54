"""The operator image's inputs are pinned by hash, and a changed input stops the build
(hack/image/debian.py, pylock.py)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from hack.image import debian, pylock, scan, sign
from hack.image.build import CONSTRAINTS, requirements
from hack.image.tools import PinnedTool
from tests.gomodpins import assert_wrapper_pins


def test_a_mirror_url_maps_to_its_snapshot_archive() -> None:
    main = "http://deb.debian.org/debian/pool/main/z/zlib/zlib1g_1.2.13.dfsg-1_amd64.deb"
    security = (
        "http://deb.debian.org/debian-security/pool/updates/main/o/openssl/"
        "libssl3_3.0.22-1%7edeb12u2_arm64.deb"
    )
    stamp = "20261129T121200Z"
    assert debian.snapshot_url(main, stamp) == (
        "https://snapshot.debian.org/archive/debian/20261129T121200Z/pool/main/z/zlib/"
        "zlib1g_1.2.13.dfsg-1_amd64.deb"
    )
    assert debian.snapshot_url(security, stamp) == (
        "https://snapshot.debian.org/archive/debian-security/20261129T121200Z/pool/updates/"
        "main/o/openssl/libssl3_3.0.22-1%7edeb12u2_arm64.deb"
    )
    assert debian.snapshot_url("http://mirror.example/debian/pool/x.deb", stamp) is None


def test_the_operator_locks_record_when_they_were_resolved() -> None:
    for arch in ("amd64", "arm64"):
        stamp = debian.lock_timestamp(debian.OPERATOR.lock_path(arch))
        assert stamp is not None and len(stamp) == len("20261129T121200Z"), arch


def test_a_deb_whose_bytes_changed_stops_the_build(tmp_path: Path) -> None:
    served = tmp_path / "served" / "netbase_6.4_all.deb"
    served.parent.mkdir()
    served.write_bytes(b"what the lock pinned")
    pinned = hashlib.sha256(served.read_bytes()).hexdigest()
    package = debian.Package("netbase", "6.4", "all", pinned, 20, served.as_uri())
    (fetched,) = debian.fetch([package], tmp_path / "cache")
    assert fetched.read_bytes() == b"what the lock pinned"
    served.write_bytes(b"what the mirror serves now")
    fetched.write_bytes(b"a cache someone edited")  # a cached file is hashed again too
    with pytest.raises(RuntimeError, match=r"has sha256 \w+, but the lock says"):
        debian.fetch([package], tmp_path / "cache")


def test_the_wheel_lock_matches_pyproject_and_constraints() -> None:
    pylock.check(requirements(), CONSTRAINTS)


def test_a_changed_constraint_stops_the_build_until_the_lock_is_written_again(
    tmp_path: Path,
) -> None:
    moved = tmp_path / "constraints.txt"
    moved.write_text(CONSTRAINTS.read_text().replace("httpx==", "httpx==9", 1))
    with pytest.raises(RuntimeError, match="lock-wheels"):
        pylock.check(requirements(), moved)


def test_every_wheel_pin_carries_hashes() -> None:
    text = pylock.LOCK_FILE.read_text()
    pins = [line for line in text.splitlines() if "==" in line]
    assert len(pins) > 20
    entries = text.split("==")[1:]
    assert all("--hash=sha256:" in entry for entry in entries)


@pytest.mark.parametrize("tool", [scan.SYFT, sign.COSIGN], ids=lambda tool: tool.name)
def test_each_tool_is_built_from_its_pinned_module(tool: PinnedTool) -> None:
    assert_wrapper_pins(tool.wrapper.parent, tool.wrapper.name, tool.module, tool.version)
    assert tool.package.startswith(f"{tool.module}/")
    assert f'import _ "{tool.package}"' in (tool.wrapper / "tools.go").read_text()


def test_only_a_digest_is_signed() -> None:
    digest = "sha256:" + "0f" * 32
    assert sign.digest_reference(f"127.0.0.1:5000/team/op@{digest}").endswith(digest)
    for moving in ("127.0.0.1:5000/team/op:0.1.0", "team/op", f"team/op:0.1@{digest[:-1]}"):
        with pytest.raises(sign.SigningError, match="does not name a digest"):
            sign.digest_reference(moving)
