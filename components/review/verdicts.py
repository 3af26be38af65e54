"""What every kind's verdict is built from: the object parsed as the operator parses
it, the verdict's fixed fields, the answer for an object the operator refuses, and the
paths of a spec the engine cannot show (known at deploy, or a secret it says changed).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from operator_runtime.api import load_object

from .changes import ObjectChange
from .model import Verdict
from .rules import ReviewSettings

__all__ = ["base", "invalid", "load", "spec_uncertain"]

_Kind = TypeVar("_Kind")


def load(
    document: Mapping[str, object] | None, settings: ReviewSettings, kind: type[_Kind]
) -> _Kind | None:
    """``document`` as the operator parses it (``None`` stays ``None``); raises
    ``InvalidObjectError`` for an object it refuses."""
    if document is None:
        return None
    obj = load_object(dict(document), settings.options.feature_gates)
    assert isinstance(obj, kind)
    return obj


def base(change: ObjectChange, **fields: object) -> Verdict:
    return Verdict(
        kind=change.kind,
        namespace=change.namespace,
        name=change.name,
        op=change.op,
        changed=change.changed,
        origin=change.origin,
        **fields,  # type: ignore[arg-type]
    )


def invalid(change: ObjectChange, settings: ReviewSettings, message: str) -> Verdict:
    if change.unknown or change.secret:
        finding = settings.finding(
            "known-at-deploy",
            change.ref,
            "not checked: it holds values known only at deploy or secret, which may be why "
            "it does not parse",
        )
        return base(change, summary="known at deploy", findings=(finding,), known_at_deploy=True)
    finding = settings.finding("invalid-object", change.ref, message)
    return base(change, summary="refused by the operator", findings=(finding,))


def spec_uncertain(change: ObjectChange, prefix: str = "spec.") -> list[str]:
    """Paths under ``prefix`` the engine knows only at deploy, or secrets it says change."""
    unknown = [p for p in change.unknown if p.startswith(prefix)]
    secret = [
        p
        for p in change.secret
        if p.startswith(prefix)
        and any(
            p == e or p.startswith(e + ".") or p.startswith(e + "[") for e in change.engine_changed
        )
    ]
    return sorted(set(unknown) | set(secret))
