"""The docs name the engine the repository builds (hack/pulumi/versions.py), not an
older one: docs/policy.md once said CLI v3.259 while the pin was v3.274.1."""

from __future__ import annotations

import re
from pathlib import Path

from hack.pulumi import versions

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_the_docs_name_the_engine_the_repository_builds() -> None:
    documents = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
    named = {"CLI": versions.PULUMI, "Python host": versions.LANGUAGE_PYTHON}
    seen = 0
    for document in documents:
        text = " ".join(document.read_text().split())
        for what, pinned in named.items():
            for found in re.findall(rf"\b{what} (v\d+\.\d+(?:\.\d+)?)\b", text):
                seen += 1
                assert found == pinned, f"{document.name}: {what} {found}, pinned {pinned}"
    assert seen, "no page names the engine: the check would hold nothing"
