"""Every command the README and ``docs/`` show with its output prints that output.

A fenced block with ``$ `` lines is a session: the commands as a reader types them, then
what they print. Each session is run here as printed (the review sessions by
test_review_docs.py), with this checkout's ``pulumi_ray`` first on the path: a shared
virtualenv's editable install may be another checkout's. An output shown with ``...``
is held up to that line; a new session no test runs fails
``test_every_session_is_run_by_a_test``, so the next drift fails ``make test``.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = ("README.md", "examples/README.md", *sorted(
    str(path.relative_to(ROOT)) for path in (ROOT / "docs").glob("*.md")
))  # fmt: skip

RENDER_QUICKSTART = "$ .venv/bin/python -m pulumi_ray render examples/quickstart"
RENDER_MANIFEST = "$ .venv/bin/python -m operator_runtime render cluster.yaml"
REVIEW = "$ python -m pulumi_ray review"
"""The review sessions' last command starts so (test_review_docs.py runs them)."""

MISTAKEN_MANIFEST = """\
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: demo
  namespace: ml
spec:
  headGroupSpec:
    template:
      spec:
        containers:
        - name: ray-head
          image: rayproject/ray:2.52.0
          imagePullPolicey: Always
          resources:
            limits:
              cpu: 1x
"""
"""The ``cluster.yaml`` of the README's session: a typo and a bad quantity."""


def _sessions() -> list[tuple[str, str]]:
    """(document, block) for every fenced block with a ``$ `` line."""
    found = []
    for document in DOCUMENTS:
        text = (ROOT / document).read_text()
        for block in re.findall(r"^```\w*\n(.*?)^```$", text, flags=re.M | re.S):
            if any(line.startswith("$ ") for line in block.splitlines()):
                found.append((document, block))
    return found


def _session(first_command: str) -> str:
    [block] = [block for _, block in _sessions() if block.startswith(first_command + "\n")]
    return block


def _run(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``command`` (a session's line, without ``$ ``) with the interpreter the session
    names resolved in this checkout, and this checkout's packages first."""
    argv = shlex.split(command)
    assert argv[0] == ".venv/bin/python", argv
    shim = cwd / "shim"
    shim.mkdir(exist_ok=True)
    if not (shim / "pulumi_ray").exists():
        (shim / "pulumi_ray").symlink_to(ROOT / "components", target_is_directory=True)
    env = {**os.environ, "PYTHONPATH": f"{shim}{os.pathsep}{ROOT}"}
    return subprocess.run(
        [sys.executable, *argv[1:]],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _shown(block: str) -> tuple[list[str], bool]:
    """The output lines a session shows, and whether it elides the rest (``...``)."""
    lines = block.splitlines()[1:]
    if lines and lines[-1].strip() == "...":
        return lines[:-1], True
    return lines, False


def test_every_session_is_run_by_a_test() -> None:
    known = (RENDER_QUICKSTART, RENDER_MANIFEST)
    for document, block in _sessions():
        first = block.splitlines()[0]
        commands = [line for line in block.splitlines() if line.startswith("$ ")]
        held = first in known or commands[-1].startswith(REVIEW)
        assert held, f"{document}: a session no test runs: {first!r}"


def test_render_of_the_quickstart_prints_what_the_readme_shows(tmp_path: Path) -> None:
    """As a reviewer has the program: no stack, no ``operatorImage`` config (the operator's
    image changes nothing the operator creates for the RayCluster)."""
    block = _session(RENDER_QUICKSTART)
    result = _run(RENDER_QUICKSTART[2:].replace("examples/", f"{ROOT}/examples/"), tmp_path)
    assert result.returncode == 0, result.stderr
    shown, elided = _shown(block)
    printed = result.stdout.splitlines()
    assert elided and printed[: len(shown)] == shown
    readme = (ROOT / "README.md").read_text()
    claimed = re.search(r"^(\d+) lines: the head pod", readme.split(block, 1)[1], flags=re.M)
    assert claimed is not None and int(claimed.group(1)) == len(printed)


def test_render_diff_of_the_quickstart_against_itself_is_empty(tmp_path: Path) -> None:
    quickstart = str(ROOT / "examples" / "quickstart")
    result = _run(
        f".venv/bin/python -m pulumi_ray render {quickstart} --diff {quickstart}", tmp_path
    )
    assert (result.returncode, result.stdout) == (0, ""), result.stderr


def test_render_still_refuses_a_bad_value_in_the_quickstart(tmp_path: Path) -> None:
    """The README's line for ``min_replicas`` above ``max_replicas``, exactly; offline or
    not, an input error of a component stops the run."""
    readme = (ROOT / "README.md").read_text()
    [line] = [
        block.strip()
        for block in re.findall(r"^```text\n(.*?)^```$", readme, flags=re.M | re.S)
        if block.startswith("RayCluster default/demo: ")
    ]
    program = tmp_path / "quickstart"
    program.mkdir()
    for name in ("Pulumi.yaml", "__main__.py"):
        text = (ROOT / "examples" / "quickstart" / name).read_text()
        (program / name).write_text(text.replace('"min_replicas": 0', '"min_replicas": 5'))
    result = _run(f".venv/bin/python -m pulumi_ray render {program}", tmp_path)
    assert result.returncode == 2, result.stdout
    assert result.stderr == f"render: {program}: {line}\n"


def test_render_of_a_mistaken_manifest_prints_what_the_readme_shows(tmp_path: Path) -> None:
    block = _session(RENDER_MANIFEST)
    (tmp_path / "cluster.yaml").write_text(MISTAKEN_MANIFEST)
    result = _run(RENDER_MANIFEST[2:], tmp_path)
    assert result.returncode == 1
    shown, elided = _shown(block)
    assert not elided
    assert (result.stdout + result.stderr).splitlines() == shown


@pytest.mark.parametrize("document", DOCUMENTS)
def test_each_document_is_read(document: str) -> None:
    """The list of documents is not empty by mistake (a moved README would hold nothing)."""
    assert (ROOT / document).read_text().strip()
