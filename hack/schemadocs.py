"""The reference part of ``docs/components.md``, written from ``components/schema.json``::

    python -m hack.schemadocs           # rewrite the reference between the markers
    python -m hack.schemadocs --check   # exit 1 with a diff if it is stale (make lint)

The schema is what every language sees of the components, so the reference is made from
it, not typed beside it: a field added to an args class shows up in the schema's golden
diff and, after ``make schema``, here. The prose above the markers stays hand-written.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from components.schema import write_or_check

REPO: Final = Path(__file__).resolve().parents[1]
SCHEMA: Final = REPO / "components" / "schema.json"
DOC: Final = REPO / "docs" / "components.md"
BEGIN: Final = "<!-- reference: written by `make schema` from components/schema.json -->"
END: Final = "<!-- end of reference -->"
TOKEN_PREFIX: Final = "ray:index:"

Property = Mapping[str, Any]


def _short(token: str) -> str:
    return token.removeprefix(TOKEN_PREFIX)


def _prose(text: str | None) -> str:
    """A description on one table line: RST literals as Markdown, whitespace folded."""
    if not text:
        return ""
    text = re.sub(r"``([^`]+)``", r"`\1`", text)
    return " ".join(text.split()).replace("|", "\\|")


def _first_paragraph(text: str | None) -> str:
    return _prose((text or "").split("\n\n", 1)[0])


def _type(prop: Property) -> str:
    ref = prop.get("$ref")
    if isinstance(ref, str):
        return (
            "any"
            if ref == "pulumi.json#/Any"
            else f"[{_short(ref.split('/')[-1])}](#{_anchor(ref)})"
        )
    kind = prop.get("type", "any")
    if kind == "array":
        return f"list of {_type(prop.get('items', {}))}"
    if kind == "object" and "additionalProperties" in prop:
        return f"map of {_type(prop['additionalProperties'])}"
    return str(kind)


def _anchor(ref: str) -> str:
    return _short(ref.split("/")[-1]).lower()


def _table(
    properties: Mapping[str, Property], required: Sequence[str], plain_note: bool
) -> list[str]:
    if not properties:
        return ["(none)", ""]
    lines = ["| name | type | description |", "|---|---|---|"]
    for name in sorted(properties):
        prop = properties[name]
        kind = _type(prop)
        if name in required:
            kind += ", always set" if not plain_note else ", required"
        if plain_note and prop.get("plain"):
            kind += ", plain"
        lines.append(f"| `{name}` | {kind} | {_prose(prop.get('description'))} |")
    return [*lines, ""]


def reference(schema: Mapping[str, Any]) -> str:
    """The Markdown reference of every resource and type of the package schema."""
    out = [
        BEGIN,
        "",
        "## Reference",
        "",
        f"Package `{schema['name']}`, version {schema.get('version', 'unset')}. "
        "Input names are as a YAML, TypeScript or Go program writes them (camelCase); a "
        "Python program uses the snake_case fields of the args classes. *plain* inputs "
        "take a value known when the program runs, not an Output.",
        "",
    ]
    for token in sorted(schema["resources"]):
        resource = schema["resources"][token]
        out += [
            f"### {_short(token)}",
            "",
            f"`{token}`: {_first_paragraph(resource.get('description'))}",
            "",
        ]
        out += ["Inputs:", ""]
        out += _table(resource.get("inputProperties", {}), resource.get("requiredInputs", []), True)
        out += ["Outputs:", ""]
        out += _table(resource.get("properties", {}), resource.get("required", []), False)
    for token in sorted(schema.get("types", {})):
        kind = schema["types"][token]
        out += [
            f"### {_short(token)}",
            "",
            f"`{token}`: {_first_paragraph(kind.get('description'))}",
            "",
        ]
        if "enum" in kind:
            values = ", ".join(f"`{e['value']}`" for e in kind["enum"])
            out += [f"One of {values}.", ""]
        else:
            out += _table(kind.get("properties", {}), kind.get("required", []), True)
    return "\n".join([*out, END])


def updated(document: str, schema: Mapping[str, Any]) -> str:
    """``document`` with its reference section replaced (appended when it has none)."""
    section = reference(schema)
    if BEGIN in document and END in document:
        head, rest = document.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
        return f"{head}{section}{tail}"
    return f"{document.rstrip()}\n\n{section}\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hack.schemadocs")
    parser.add_argument("--check", action="store_true", help="fail if the reference is stale")
    args = parser.parse_args(argv)
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    wanted = updated(DOC.read_text(encoding="utf-8"), schema)
    return write_or_check(DOC, wanted, check=args.check, remedy="make schema")


if __name__ == "__main__":
    sys.exit(main())
