"""A review as SARIF 2.1.0 (``--format sarif``), for GitHub code scanning and its kin.

One result per finding. Its rule is the review's (``rules.RULES``: the id, the text, the
default level; ``warn`` is SARIF's ``warning``, ``block`` its ``error``), its message the
finding's, which names what changed and never a value. Its location is, where the
review can tell, the program file that declares the object (the line naming its Pulumi
resource, or a manifest's ``name:`` line), and always the object itself as a logical
location: the engine's URN when the input is a preview, else ``Kind/namespace/name``.
Code scanning shows a result only with a file location, so a CI job that reviews a
preview says which program it came from (``--program``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from .._program import ProgramError, load_program
from .formats import shown
from .model import Finding, Verdict
from .report import Report
from .rules import RULES

__all__ = ["SARIF_SCHEMA", "SARIF_VERSION", "Program", "as_sarif"]

SARIF_VERSION: Final = "2.1.0"
SARIF_SCHEMA: Final = "https://json.schemastore.org/sarif-2.1.0.json"
TOOL_NAME: Final = "pulumi-ray review"
_LEVELS: Final = {"warn": "warning", "block": "error"}
_ORIGIN: Final = re.compile(r'resource "(?P<name>[^"]+)"')
"""How ``changes`` names an object from a program or a preview (``ObjectChange.origin``)."""


@dataclass(frozen=True)
class Program:
    """Where the reviewed objects are declared: a Pulumi program's folder or a manifest."""

    path: str | None = None
    """None: not known (a preview read without ``--program``)."""
    urns: Mapping[str, str] = field(default_factory=dict)
    """An object's URN by its ``Kind namespace/name`` (a preview's input)."""

    def file(self) -> Path | None:
        """The file that declares the objects: a manifest, or a program's main file as
        ``render`` finds it (``Pulumi.yaml``'s ``main``); ``Pulumi.yaml`` itself for a
        program that has none (a Pulumi YAML program)."""
        if self.path is None or self.path == "-":
            return None
        path = Path(self.path)
        if path.is_file():
            return path
        try:
            return load_program(path, None).main
        except ProgramError:
            project = path / "Pulumi.yaml"
            return project if project.is_file() else None


def _line(lines: list[str], verdict: Verdict) -> int | None:
    """The line that names the object: its Pulumi resource name as a string literal (or
    a YAML program's resource key), else a manifest's ``name:`` of it."""
    origin = _ORIGIN.fullmatch(verdict.origin)
    patterns = (
        [
            re.compile(rf"""(["']){re.escape(origin["name"])}\1"""),
            re.compile(rf"^\s*{re.escape(origin['name'])}:\s*$"),
        ]
        if origin
        else [re.compile(rf"""^\s*name:\s*(["']?){re.escape(verdict.name)}\1\s*$""")]
    )
    for pattern in patterns:
        for number, text in enumerate(lines, start=1):
            if pattern.search(text):
                return number
    return None


def _uri(path: Path) -> str:
    if not path.is_absolute():
        return path.as_posix()
    try:
        return path.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return path.as_uri()


@dataclass(frozen=True)
class _Source:
    """The declaring file as read once: its URI and lines (none without a file)."""

    uri: str | None
    lines: list[str]

    @classmethod
    def of(cls, program: Program | None) -> _Source:
        path = program.file() if program else None
        if path is None:
            return cls(None, [])
        try:
            return cls(_uri(path), path.read_text(encoding="utf-8").splitlines())
        except (OSError, UnicodeDecodeError):
            return cls(_uri(path), [])


def _location(
    verdict: Verdict | None, ref: str, urns: Mapping[str, str], source: _Source
) -> dict[str, object]:
    kind, _, name = ref.partition(" ")
    logical = {
        "name": shown(name.rpartition("/")[2]),
        "fullyQualifiedName": shown(urns.get(ref) or f"{kind}/{name}"),
        "kind": "resource",
    }
    location: dict[str, object] = {"logicalLocations": [logical]}
    if source.uri is not None:
        physical: dict[str, object] = {"artifactLocation": {"uri": source.uri}}
        number = _line(source.lines, verdict) if verdict is not None else None
        if number is not None:
            physical["region"] = {"startLine": number}
        location["physicalLocation"] = physical
    return location


def _rule(rule: str) -> dict[str, object]:
    level, text = RULES[rule]
    return {
        "id": rule,
        "name": "".join(part.capitalize() for part in rule.split("-")),
        "shortDescription": {"text": text},
        "defaultConfiguration": {"level": _LEVELS[level]},
        "help": {"text": f"{text}. Set its level with --level {rule}=warn|block|off."},
    }


def _result(finding: Finding, index: int, location: dict[str, object]) -> dict[str, object]:
    fingerprint = hashlib.sha256(f"{finding.rule}\0{finding.ref}".encode()).hexdigest()
    return {
        "ruleId": finding.rule,
        "ruleIndex": index,
        "level": _LEVELS[finding.level],
        "message": {"text": shown(f"{finding.ref}: {finding.message}")},
        "locations": [location],
        "partialFingerprints": {"rayObjectRule/v1": fingerprint[:32]},
    }


def as_sarif(report: Report, *, program: Program | None = None, version: str = "") -> str:
    """The report's findings as a SARIF 2.1.0 log with one run; ``program`` says where the
    objects are declared, ``version`` is the tool's."""
    rule_ids = sorted(RULES)
    by_ref = {verdict.ref: verdict for verdict in report.verdicts}
    source, urns = _Source.of(program), program.urns if program else {}
    driver: dict[str, object] = {"name": TOOL_NAME, "rules": [_rule(r) for r in rule_ids]}
    if version:
        driver["version"] = version
    log = {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [
            {
                "tool": {"driver": driver},
                "results": [
                    _result(
                        f,
                        rule_ids.index(f.rule),
                        _location(by_ref.get(f.ref), f.ref, urns, source),
                    )
                    for f in report.findings
                ],
                "columnKind": "unicodeCodePoints",
            }
        ],
    }
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"
