"""The review's input: the ray.io/v1 objects a change touches, each as its document
before and after, whatever the change came from.

Two sources give the same ``ObjectChange`` list:

- ``from_preview``: the JSON of ``pulumi preview --json``. Each step carries the
  resource's state before (``oldState``) and after (``newState``) in the engine's
  serialized form, the property paths that differ (``detailedDiff``) and why the engine
  replaces it (``replaceReasons``). A replacement is three steps of one URN
  (``create-replacement``, ``replace``, ``delete-replaced``); their order says whether the
  new object exists before the old one goes.
- ``from_sources``: two renders' inputs (programs run under mocks, or manifests), as
  ``render --diff`` takes them, paired by kind, namespace and name.

Values are never carried as they are where they must not be shown: a secret (the
engine's ``[secret]`` ciphertext, a ``--show-secrets`` plaintext, or a secret Output
under the mocks) becomes the rendering's secret stand-in, and a value the
engine does not know yet (its unknown sentinel) the unknown stand-in, with the path of
each recorded so the report can say "known at deploy" or "a secret changed".
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from operator_runtime.api import JSONObject

from .._program import AUTONAME_SUFFIX, SECRET_SIG, SIG, UNKNOWN
from ..rendering import RAY_TYPES, SECRET_STANDIN, UNKNOWN_STANDIN, InputError, Source

__all__ = ["ObjectChange", "Op", "changed_paths", "from_preview", "from_sources"]

Op = Literal["create", "update", "delete", "replace"]

_WIRE_KEYS: Final = ("apiVersion", "kind", "metadata", "spec")
_REPLACE_OPS: Final = frozenset({"replace", "create-replacement", "delete-replaced"})
_SIMPLE_OPS: Final[Mapping[str, Op]] = {"create": "create", "update": "update", "delete": "delete"}
_SECRET_TEXT: Final = "[secret]"
"""What the engine's blinding crypter writes for every secret in ``--json`` output."""
_KEYED_LISTS: Final = ("groupName", "name")
"""A list of objects carrying one of these keys is paired by it, so a path names a
worker group (``workerGroupSpecs[gpu]``) rather than its position."""


@dataclass(frozen=True)
class ObjectChange:
    """One ray.io/v1 object the change creates, updates, replaces or deletes."""

    kind: str
    namespace: str
    name: str
    op: Op
    before: JSONObject | None
    after: JSONObject | None
    origin: str = ""
    """How the input names it: ``resource "demo"`` (a program or a preview)."""
    changed: tuple[str, ...] = ()
    """Paths that differ between the documents (worker groups named, not numbered)."""
    engine_changed: tuple[str, ...] = ()
    """The engine's ``detailedDiff`` paths: the only word on a secret that changed."""
    unknown: tuple[str, ...] = ()
    """Paths of ``after`` the engine knows only at deploy."""
    secret: tuple[str, ...] = ()
    """Paths of ``before`` or ``after`` holding a secret (never shown)."""
    replace_reasons: tuple[str, ...] = ()
    create_before_delete: bool = False
    """A replacement whose new object exists before the old one is deleted."""
    urn: str = ""
    """The engine's URN of the resource (a preview's input only)."""

    @property
    def ref(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


@dataclass
class _Found:
    unknown: list[str] = field(default_factory=list)
    secret: list[str] = field(default_factory=list)


def from_preview(text: str, *, source: str = "<preview>") -> list[ObjectChange]:
    """The ray.io/v1 objects of a ``pulumi preview --json`` output. Raises ``InputError``."""
    try:
        digest = json.loads(text)
    except json.JSONDecodeError as error:
        raise InputError(f"{source}: not the JSON of `pulumi preview --json`: {error}") from None
    steps = digest.get("steps") if isinstance(digest, dict) else None
    if not isinstance(steps, list):
        raise InputError(
            f"{source}: no `steps` list; give the output of `pulumi preview --json` "
            "(a preview without changes still has one, empty)"
        )
    by_urn: dict[str, list[Mapping[str, Any]]] = {}
    for step in steps:
        if isinstance(step, dict) and _step_type(step) in RAY_TYPES:
            by_urn.setdefault(str(step.get("urn", "")), []).append(step)
    changes = []
    for urn, urn_steps in by_urn.items():
        change = _change_of(urn, urn_steps)
        if change is not None:
            changes.append(change)
    return sorted(changes, key=lambda c: (c.kind, c.namespace, c.name))


def _step_type(step: Mapping[str, Any]) -> str:
    for key in ("newState", "oldState"):
        state = step.get(key)
        if isinstance(state, dict) and state.get("type"):
            return str(state["type"])
    # urn:pulumi:<stack>::<project>::<parent types$>type::<name>
    parts = str(step.get("urn", "")).split("::")
    return parts[2].rsplit("$", 1)[-1] if len(parts) >= 4 else ""


def _change_of(urn: str, steps: Sequence[Mapping[str, Any]]) -> ObjectChange | None:
    ops = [str(step.get("op", "")) for step in steps]
    if any(op in _REPLACE_OPS for op in ops):
        op: Op = "replace"
    elif len(ops) == 1 and ops[0] in _SIMPLE_OPS:
        op = _SIMPLE_OPS[ops[0]]
    else:
        return None  # same, read, refresh, import: nothing happens to the object
    found = _Found()
    old_state = next((s["oldState"] for s in steps if isinstance(s.get("oldState"), dict)), None)
    new_state = next((s["newState"] for s in steps if isinstance(s.get("newState"), dict)), None)
    resource_name = urn.rsplit("::", 1)[-1]
    before = _document(old_state, resource_name, found) if op != "create" else None
    after = _document(new_state, resource_name, found) if op != "delete" else None
    engine_paths = sorted({path for s in steps for path in _keys(s.get("detailedDiff"))})
    reasons = sorted({str(r) for s in steps for r in s.get("replaceReasons") or ()})
    create_first = op == "replace" and _created_first(ops)
    meta = _metadata(after if after is not None else before)
    kind = str((after or before or {}).get("kind") or _step_type(steps[0]).rsplit(":", 1)[-1])
    return ObjectChange(
        kind=kind,
        namespace=str(meta.get("namespace") or "default"),
        name=str(meta.get("name") or resource_name),
        op=op,
        before=before,
        after=after,
        origin=f'resource "{resource_name}"',
        changed=tuple(changed_paths(before, after)),
        engine_changed=tuple(engine_paths),
        unknown=tuple(sorted(set(found.unknown))),
        secret=tuple(sorted(set(found.secret))),
        replace_reasons=tuple(reasons),
        create_before_delete=create_first,
        urn=urn,
    )


def _keys(value: object) -> Iterator[str]:
    if isinstance(value, dict):
        yield from (str(key) for key in value)


def _created_first(ops: Sequence[str]) -> bool:
    if "create-replacement" in ops and "delete-replaced" in ops:
        return ops.index("create-replacement") < ops.index("delete-replaced")
    return "delete-replaced" not in ops  # the engine's default: create, then delete


def _document(
    state: Mapping[str, Any] | None, resource_name: str, found: _Found
) -> JSONObject | None:
    if state is None:
        return None
    inputs = _mapping(state.get("inputs"))
    outputs = _mapping(state.get("outputs"))
    wire = {key: inputs[key] for key in _WIRE_KEYS if key in inputs} or {
        key: outputs[key] for key in _WIRE_KEYS if key in outputs
    }
    document = _plain(wire, found, "")
    if not isinstance(document, dict):
        return None
    metadata = document.setdefault("metadata", {})
    if isinstance(metadata, dict) and not metadata.get("name"):
        named = _mapping(outputs.get("metadata")).get("name")
        # pulumi-kubernetes names a nameless object after its resource, with a suffix.
        if isinstance(named, str) and named != UNKNOWN:
            metadata["name"] = named
        else:
            metadata["name"] = f"{resource_name}-{AUTONAME_SUFFIX}"
    return document


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _plain(value: Any, found: _Found, path: str) -> Any:
    """Engine JSON -> plain JSON with stand-ins for secrets and unknowns."""
    if isinstance(value, dict):
        if value.get(SIG) == SECRET_SIG:
            # The engine's ``ciphertext`` (``[secret]``) or, with ``--show-secrets``, its
            # ``plaintext``: one stand-in for the whole value, keys and all.
            found.secret.append(path)
            return SECRET_STANDIN
        return {key: _plain(item, found, _join(path, key)) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item, found, f"{path}[{i}]") for i, item in enumerate(value)]
    if value is None:
        return None
    if value == _SECRET_TEXT:
        found.secret.append(path)
        return SECRET_STANDIN
    if value == UNKNOWN:
        found.unknown.append(path)
        return UNKNOWN_STANDIN
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _metadata(document: JSONObject | None) -> Mapping[str, Any]:
    metadata = (document or {}).get("metadata")
    return metadata if isinstance(metadata, dict) else {}


def changed_paths(before: object, after: object, path: str = "") -> list[str]:
    """The paths where two documents differ, lists of named objects paired by name;
    a path, never a value."""
    if before == after:
        return []
    if isinstance(before, dict) and isinstance(after, dict):
        out: list[str] = []
        for key in sorted(set(before) | set(after), key=str):
            out += changed_paths(before.get(key), after.get(key), _join(path, str(key)))
        return out
    if isinstance(before, list) and isinstance(after, list):
        key = _list_key(before, after)
        if key is None:
            if len(before) != len(after):
                return [path]
            out = []
            for index, (old, new) in enumerate(zip(before, after, strict=True)):
                out += changed_paths(old, new, f"{path}[{index}]")
            return out
        olds = {str(item[key]): item for item in before}
        news = {str(item[key]): item for item in after}
        out = []
        for name in sorted(set(olds) | set(news)):
            out += changed_paths(olds.get(name), news.get(name), f"{path}[{name}]")
        return out
    return [path]


def _list_key(*lists: list[Any]) -> str | None:
    items = [item for each in lists for item in each]
    for key in _KEYED_LISTS:
        if items and all(
            isinstance(item, dict) and isinstance(item.get(key), str) for item in items
        ):
            names = [[item[key] for item in each] for each in lists]
            if all(len(set(each)) == len(each) for each in names):
                return key
    return None


def from_sources(before: Sequence[Source], after: Sequence[Source]) -> list[ObjectChange]:
    """Pair two inputs' ray.io/v1 objects by kind, namespace and name."""
    olds = {_source_key(s): s for s in before}
    news = {_source_key(s): s for s in after}
    changes = []
    for key in sorted(set(olds) | set(news)):
        old, new = olds.get(key), news.get(key)
        old_doc = old.document if old else None
        new_doc = new.document if new else None
        if old_doc == new_doc:
            continue
        op: Op = "create" if old_doc is None else "delete" if new_doc is None else "update"
        unknown = [p for p in _leaf_paths(new_doc) if p[1] == UNKNOWN_STANDIN]
        secret = [p for d in (old_doc, new_doc) for p in _leaf_paths(d) if p[1] == SECRET_STANDIN]
        changes.append(
            ObjectChange(
                kind=key[0],
                namespace=key[1],
                name=key[2],
                op=op,
                before=old_doc,
                after=new_doc,
                origin=new.origin if new else old.origin if old else "",
                changed=tuple(changed_paths(old_doc, new_doc)),
                unknown=tuple(sorted({p for p, _ in unknown})),
                secret=tuple(sorted({p for p, _ in secret})),
            )
        )
    return _runs_replaced(changes)


def _runs_replaced(changes: list[ObjectChange]) -> list[ObjectChange]:
    """A RayJob of the components is named after a digest of its spec: a spec change
    is another name, which a program's resource deletes and creates. The engine calls
    that a replacement (the new object first); so does the review."""
    created = {c.origin: c for c in changes if c.kind == "RayJob" and c.op == "create" and c.origin}
    paired = {}
    for old in changes:
        new = created.get(old.origin)
        if old.kind == "RayJob" and old.op == "delete" and new and new.namespace == old.namespace:
            paired[old.origin] = (old, new)
    if not paired:
        return changes
    out = []
    for change in changes:
        pair = paired.get(change.origin) if change.kind == "RayJob" else None
        if pair is None:
            out.append(change)
        elif change is pair[1]:
            old, new = pair
            out.append(
                dataclasses.replace(
                    new,
                    op="replace",
                    before=old.before,
                    changed=tuple(changed_paths(old.before, new.after)),
                    secret=tuple(sorted(set(old.secret) | set(new.secret))),
                    replace_reasons=("metadata.name",),
                    create_before_delete=True,
                )
            )
    return out


def _source_key(source: Source) -> tuple[str, str, str]:
    meta = _metadata(source.document)
    kind = str(source.document.get("kind"))
    return (kind, str(meta.get("namespace") or "default"), str(meta.get("name") or ""))


def _leaf_paths(value: object, path: str = "") -> Iterator[tuple[str, object]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaf_paths(item, _join(path, str(key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _leaf_paths(item, f"{path}[{index}]")
    elif value is not None:
        yield path, value
