"""hack/image/reuse.py: an image build kept in the build cache is copied out only under
the key it was built with, and the operator image's key follows what the image holds."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from hack.image import REPO_ROOT, ImageBuild, reuse
from hack.image import build as operator_build


def _write_build(dist_dir: Path, digest: str) -> ImageBuild:
    """A stand-in build's output: the parts ``make image`` leaves in its dist directory."""
    (dist_dir / "oci").mkdir(parents=True, exist_ok=True)
    (dist_dir / "oci" / "index.json").write_text(json.dumps({"digest": digest}))
    (dist_dir / "build.json").write_text(json.dumps({"digest": digest}))
    (dist_dir / "sbom.json").write_text(digest)
    return _read(dist_dir)


def _read(dist_dir: Path) -> ImageBuild:
    digest = json.loads((dist_dir / "build.json").read_text())["digest"]
    return ImageBuild(layout=dist_dir / "oci", digest=digest, compressed_bytes=0,
                      unpacked_bytes=0)  # fmt: skip


PARTS = ("oci", "build.json", "sbom.json")


def test_a_kept_build_is_copied_under_its_key_and_replaced_under_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PULUMI_RAY_CACHE", str(tmp_path / "cache"))
    dist_dir = tmp_path / "dist"
    builds: list[str] = []

    def build(digest: str) -> ImageBuild:
        builds.append(digest)
        return _write_build(dist_dir, digest)

    def reused(key: str, digest: str) -> ImageBuild:
        return reuse.built_or_reused(
            "operator", dist_dir, key, lambda: build(digest), lambda: _read(dist_dir), PARTS
        )

    assert reused("k1", "sha256:one").digest == "sha256:one"
    (dist_dir / "sbom.json").write_text("changed since")  # the copy is the cache's, whole
    assert reused("k1", "sha256:ignored").digest == "sha256:one"
    assert (dist_dir / "sbom.json").read_text() == "sha256:one"
    assert builds == ["sha256:one"]

    assert reused("k2", "sha256:two").digest == "sha256:two"
    assert builds == ["sha256:one", "sha256:two"]
    kept = sorted(p.name for p in (tmp_path / "cache" / "image").iterdir())
    assert kept == ["operator-built-k2"], kept


def test_the_operator_images_key_reads_its_sources_pins_and_commit() -> None:
    facts = operator_build.recipe_facts()
    for path in (REPO_ROOT / "operator_runtime" / "__init__.py", operator_build.PYPROJECT,
                 operator_build.CONSTRAINTS):  # fmt: skip
        line = f"{path.relative_to(REPO_ROOT)} {hashlib.sha256(path.read_bytes()).hexdigest()}"
        assert line in facts, (line, facts[:5])
    modules = sorted((REPO_ROOT / "operator_runtime").rglob("*.py"))
    named = {fact.split(" ", 1)[0] for fact in facts}
    assert {str(m.relative_to(REPO_ROOT)) for m in modules} <= named
    assert "operator_runtime/py.typed" in named  # its package data too
    assert operator_build.git("rev-parse", "HEAD") in facts
    assert reuse.recipe_key(*facts) != reuse.recipe_key(*facts[1:])


def test_the_operator_image_keeps_its_sboms() -> None:
    assert set(operator_build.KEPT) == {"oci", "build.json", "sbom-amd64.spdx.json",
                                        "sbom-arm64.spdx.json"}  # fmt: skip


def test_a_kept_tree_is_made_once_per_key_and_a_failed_make_keeps_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PULUMI_RAY_CACHE", str(tmp_path / "cache"))
    made: list[str] = []

    def make(content: str) -> Callable[[Path], None]:
        def into(tree: Path) -> None:
            made.append(content)
            tree.mkdir()
            (tree / "file").write_text(content)

        return into

    first = reuse.kept_tree("deps-amd64", "k1", make("one"))
    assert reuse.kept_tree("deps-amd64", "k1", make("ignored")) == first
    assert (first / "file").read_text() == "one"
    assert made == ["one"]

    def fails(tree: Path) -> None:
        tree.mkdir()
        raise RuntimeError("pip failed")

    with pytest.raises(RuntimeError, match="pip failed"):
        reuse.kept_tree("deps-amd64", "k2", fails)
    assert sorted(p.name for p in (tmp_path / "cache" / "image").iterdir()) == [
        "deps-amd64-tree-k1"
    ]
    second = reuse.kept_tree("deps-amd64", "k2", make("two"))
    assert (second / "file").read_text() == "two"
    assert made == ["one", "two"]
    kept = sorted(p.name for p in (tmp_path / "cache" / "image").iterdir())
    assert kept == ["deps-amd64-tree-k2"], kept


def test_a_tree_another_build_kept_first_is_the_one_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PULUMI_RAY_CACHE", str(tmp_path / "cache"))
    kept = tmp_path / "cache" / "image" / "base-arm64-tree-k1"

    def make_while_another_finishes(tree: Path) -> None:
        tree.mkdir()
        (tree / "file").write_text("ours")
        kept.mkdir()  # the other build renames its tree into place first
        (kept / "file").write_text("theirs")

    assert reuse.kept_tree("base-arm64", "k1", make_while_another_finishes) == kept
    assert (kept / "file").read_text() == "theirs"
    assert [p.name for p in kept.parent.iterdir()] == [kept.name]  # no partial left
