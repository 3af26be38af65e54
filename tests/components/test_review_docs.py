"""The review's documents work as printed: the README's and the examples README's
sessions, and the CI recipes' YAML (which parses, posts one comment by the marker and
uploads SARIF)."""

from __future__ import annotations

import io
import re
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

from components.__main__ import main
from components.review import MARKER

ROOT = Path(__file__).resolve().parents[2]


def _blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", text, flags=re.M | re.S)


@pytest.mark.parametrize(
    ("readme", "exit_code"),
    [("README.md", 0), ("examples/README.md", 1)],  # the latter's quota blocks
)
def test_the_readme_session_prints_what_it_shows(
    readme: str, exit_code: int, tmp_path: Path
) -> None:
    [session] = _blocks((ROOT / readme).read_text(), "console")
    after = str(tmp_path / "after")
    commands = [line for line in session.splitlines() if line.startswith("$ ")]
    *setup, review = [line[2:].replace("/tmp/after", after) for line in commands]
    expected = session.split(commands[-1] + "\n", 1)[1]
    for command in setup:  # cp and sed, as a reader's shell runs them
        subprocess.run(["bash", "-c", command], cwd=ROOT, check=True)
    argv = shlex.split(review)
    assert argv[:3] == ["python", "-m", "pulumi_ray"]
    out = io.StringIO()
    code = main(argv[3:], stdout=out)
    assert out.getvalue() == expected
    assert code == exit_code  # as the README says


def test_the_ci_recipes_parse_and_do_what_they_say() -> None:
    text = (ROOT / "docs" / "ci.md").read_text()
    github, gitlab = (yaml.safe_load(block) for block in _blocks(text, "yaml"))
    steps = github["jobs"]["review"]["steps"]
    scripts = "\n".join(str(step.get("run", "")) + str(step.get("with", "")) for step in steps)
    assert MARKER in scripts
    assert "--format markdown" in scripts and "--format sarif" in scripts
    assert any(
        step.get("uses", "").startswith("github/codeql-action/upload-sarif") for step in steps
    )
    assert "GITHUB_STEP_SUMMARY" in scripts
    job = gitlab["ray-review"]
    script = "\n".join(job["script"])
    assert MARKER in script and "--format sarif" in script
    assert set(job["artifacts"]["paths"]) == {"review-full.md", "review.sarif"}
    assert job["script"][-1] == 'exit "$status"'


def test_review_md_lists_every_rule_at_its_default_level() -> None:
    from components.review import RULES

    text = (ROOT / "docs" / "review.md").read_text()
    table = text.split("## Findings and exit codes", 1)[1].split("\n\n", 2)[1]
    listed: dict[str, str] = {}
    for row in table.splitlines()[2:]:
        names, level = row.split(" | ")[:2]
        for name in re.findall(r"`([a-z-]+)`", names):
            listed[name] = level
    assert listed == {rule: level for rule, (level, _) in RULES.items()}
