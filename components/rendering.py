"""``python -m pulumi_ray render``: what the operator will create for a program's (or a
manifest's) Ray resources, as deterministic YAML, and the diff between two of them.

The flow: ``load_sources`` runs the Pulumi program under mocks (``_program``), or reads
the manifest, and keeps the ray.io/v1 custom resources it finds; ``render_sources`` hands
each to ``operator_runtime.render.render_manifest`` and prints the objects sorted by
kind, namespace and name, each under a comment naming the resource it comes from;
``diff_renders`` compares two renders line by line.

Values a preview cannot know are rendered as placeholders: while the object is parsed,
validated and rendered they are stand-in strings that are valid names and labels (so
validation does not trip over a ``<``), and only the printed text shows ``<unknown>``,
``<secret>`` (a secret never reaches the output) or ``<autonamed>`` (the random suffix
pulumi-kubernetes gives a nameless object).
"""

from __future__ import annotations

import contextlib
import difflib
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml

from operator_runtime.api import JSONObject
from operator_runtime.render import (
    RAY_KINDS,
    DocumentError,
    ManifestError,
    ManifestRenderParams,
    RenderOptions,
    is_ray_object,
    load_documents,
    render_manifest,
)

from ._program import (
    AUTONAME_SUFFIX,
    ENCRYPTED_CONFIG,
    SECRET_SIG,
    SIG,
    UNKNOWN,
    ProgramError,
    load_program,
    run_program,
)

__all__ = [
    "InputError",
    "InvalidResourceError",
    "Source",
    "diff_renders",
    "load_sources",
    "render_sources",
]

UNKNOWN_STANDIN: Final = "x0unkn0wn"
SECRET_STANDIN: Final = "x0s3cr3t"
PLACEHOLDERS: Final = {
    UNKNOWN_STANDIN: ("<unknown>", "not known before `pulumi up` creates what it depends on"),
    SECRET_STANDIN: ("<secret>", "a secret value, never printed"),
    AUTONAME_SUFFIX: ("<autonamed>", "the random suffix pulumi-kubernetes adds to a nameless "
                      "object's resource name"),
    ENCRYPTED_CONFIG: ("<encrypted>", "a `secure:` stack config value, which only the engine "
                       "can decrypt"),
}  # fmt: skip
"""Stand-in (valid as a DNS label) -> what the output shows, and what it means."""

_MAY_BREAK_VALIDATION: Final = frozenset({UNKNOWN_STANDIN, SECRET_STANDIN, ENCRYPTED_CONFIG})
"""Stand-ins that replace a value of any type; the autoname suffix keeps a name a name."""

RAY_TYPES: Final = {f"kubernetes:ray.io/v1:{kind}": kind for kind in RAY_KINDS}
"""pulumi-kubernetes registers a custom resource as ``kubernetes:<apiVersion>:<Kind>``."""
_WIRE_KEYS: Final = ("apiVersion", "kind", "metadata", "spec")


class InputError(Exception):
    """The input cannot be read, or the program failed; exit code 2."""


class InvalidResourceError(Exception):
    """A ray.io/v1 object the operator would refuse; exit code 1."""


@dataclass(frozen=True)
class Source:
    """One ray.io/v1 object found in the input, with placeholders for what is not known."""

    document: JSONObject
    origin: str = ""
    """How the input names it: ``resource "minimal"`` for a program; empty for a manifest."""
    placeholders: frozenset[str] = field(default_factory=frozenset)


def load_sources(path: str, *, stack: str | None = None) -> list[Source]:
    """The ray.io/v1 objects of a program directory (run under mocks, with the config of
    ``stack`` if given) or of a manifest file (``-`` reads stdin; a manifest has no stack,
    so ``stack`` does not apply: ``--diff`` may compare a program with a manifest).
    Raises ``InputError``."""
    if path != "-" and Path(path).is_dir():
        if not (Path(path) / "Pulumi.yaml").is_file():
            raise InputError(f"{path}: a directory without Pulumi.yaml is not a Pulumi program")
        return _program_sources(Path(path), stack)
    source = "<stdin>" if path == "-" else path
    try:
        if path == "-":
            text = sys.stdin.read()
        else:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
    except OSError as error:
        raise InputError(f"cannot read {path}: {error.strerror or error}") from None
    try:
        documents = load_documents(text, source)
    except DocumentError as error:
        raise InputError(str(error)) from None
    for index, document in enumerate(documents):
        if not is_ray_object(document):
            kind = document.get("kind") if isinstance(document, dict) else None
            raise InputError(
                f"{source}: document {index}: kind {kind!r} cannot be rendered; give only "
                f"ray.io/v1 objects ({', '.join(RAY_KINDS)})"
            )
    return [Source(document) for document in documents if is_ray_object(document)]


def _program_sources(directory: Path, stack: str | None) -> list[Source]:
    try:
        program = load_program(directory, stack)
        # The program's prints go to stderr: stdout is the YAML a CI job keeps.
        with contextlib.redirect_stdout(sys.stderr):
            registrations = run_program(program)
    except ProgramError as error:
        raise InputError(f"{directory}: {error}") from None
    sources = []
    for registration in registrations:
        if registration.type not in RAY_TYPES:
            continue
        found: set[str] = set()
        wire = {key: registration.raw[key] for key in _WIRE_KEYS if key in registration.raw}
        document = _from_wire(wire, found, secret=False)
        if isinstance(document, dict):
            _fill_name(document, registration.name, found)
            origin = f'resource "{registration.name}"'
            sources.append(Source(document, origin, frozenset(found)))
    return sources


def _from_wire(value: Any, found: set[str], *, secret: bool) -> Any:
    """Wire form -> plain JSON: secrets and unknowns become stand-ins (every leaf of a
    secret, whatever its type: a secret is never printed), whole floats become ints."""
    if isinstance(value, dict):
        if value.get(SIG) == SECRET_SIG:
            return _from_wire(value.get("value"), found, secret=True)
        return {key: _from_wire(item, found, secret=secret) for key, item in value.items()}
    if isinstance(value, list):
        return [_from_wire(item, found, secret=secret) for item in value]
    if value is None:
        return None
    if secret:
        found.add(SECRET_STANDIN)
        return SECRET_STANDIN
    if value == UNKNOWN:
        found.add(UNKNOWN_STANDIN)
        return UNKNOWN_STANDIN
    if isinstance(value, float) and value.is_integer():
        # Protobuf carries every number as a double; the manifest had an integer.
        return int(value)
    if isinstance(value, str):
        found.update(token for token in PLACEHOLDERS if token in value)
    return value


def _fill_name(document: JSONObject, resource_name: str, found: set[str]) -> None:
    metadata = document.get("metadata")
    if not isinstance(metadata, dict):
        metadata = document["metadata"] = {}
    if not metadata.get("name"):
        # pulumi-kubernetes names a nameless object after its resource.
        metadata["name"] = f"{resource_name}-{AUTONAME_SUFFIX}"
        found.add(AUTONAME_SUFFIX)


def render_sources(
    sources: Sequence[Source], *, options: RenderOptions, include_redis_cleanup_job: bool = True
) -> str:
    """The YAML stream: a comment block (placeholders used, what is not rendered), then
    each object under a comment naming its source, sorted by kind, namespace and name.
    Raises ``InvalidResourceError`` for an invalid object whose values are all known."""
    rendered: list[tuple[tuple[str, str, str, int], str, JSONObject]] = []
    notes: list[str] = []
    used: set[str] = set()
    for source in sorted(sources, key=_source_key):
        params = ManifestRenderParams(
            document=source.document,
            options=options,
            include_redis_cleanup_job=include_redis_cleanup_job,
        )
        try:
            result = render_manifest(params=params)
        except ManifestError as error:
            standins = sorted(source.placeholders & _MAY_BREAK_VALIDATION)
            if not standins:
                raise InvalidResourceError(_shown(str(error))) from None
            # A preview never fails on a value it does not know, and neither does this.
            shown = " or ".join(PLACEHOLDERS[token][0] for token in standins)
            notes.append(f"{_shown(str(error))} (not rendered: it holds a value shown as "
                         f"{shown}, which may be why)")  # fmt: skip
            used.update(source.placeholders)
            continue
        used.update(source.placeholders)
        header = _shown(result.ref + (f" ({source.origin})" if source.origin else ""))
        notes.extend(_shown(f"{result.ref}: {note}") for note in result.notes)
        for index, obj in enumerate(result.objects):
            rendered.append((_object_key(obj, index), header, obj))
    lines = [f"# What the operator creates for {len(sources)} ray.io/v1 object(s)."]
    for token in sorted(used, key=list(PLACEHOLDERS).index):
        shown, meaning = PLACEHOLDERS[token]
        lines.append(f"# {shown}: {meaning}.")
    # One comment line per note, whatever the message holds: a newline would end the
    # comment and put the rest of the message into the YAML.
    lines.extend("# " + " ".join(note.split()) for note in notes)
    text = "\n".join(lines) + "\n"
    for _, header, obj in sorted(rendered, key=lambda item: item[0]):
        # Keys sorted: a program that builds the same object with its keys in another
        # order (or a manifest against the program) must not show as a change.
        body = yaml.safe_dump(_shown_tree(obj), sort_keys=True, default_flow_style=False)
        text += f"---\n# from {header}\n{body}"
    return text


def _source_key(source: Source) -> tuple[str, str, str]:
    metadata = source.document.get("metadata")
    meta = metadata if isinstance(metadata, dict) else {}
    kind = source.document.get("kind")
    return (str(kind), str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def _object_key(obj: JSONObject, index: int) -> tuple[str, str, str, int]:
    # Pods are created with generateName; objects with the same key keep render order.
    metadata = obj.get("metadata")
    meta = metadata if isinstance(metadata, dict) else {}
    name = meta.get("name") or meta.get("generateName") or ""
    return (str(obj.get("kind")), str(meta.get("namespace") or ""), str(name), index)


def _shown(text: str) -> str:
    for token, (shown, _) in PLACEHOLDERS.items():
        text = text.replace(token, shown)
    return text


def _shown_tree(value: Any) -> Any:
    if isinstance(value, dict):
        return {_shown(str(key)): _shown_tree(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_shown_tree(item) for item in value]
    if isinstance(value, str):
        return _shown(value)
    return value


def diff_renders(before: str, after: str, *, before_label: str, after_label: str) -> str:
    """A unified diff of two renders; empty when they are the same."""
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=before_label,
            tofile=after_label,
        )
    )
