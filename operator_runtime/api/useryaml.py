"""The one reader of YAML that a user hands us, in go-yaml v2's dialect, with bounds.

``runtimeEnvYAML``, ``serveConfigV2``, the ``render`` CLI's input, the stack template's
manifests and the operator's ``--config`` file are all read here, so every path reads
the same text the same way, and a few hundred hostile bytes cannot expand into
gigabytes in any of them.

The dialect is KubeRay's (``sigs.k8s.io/yaml``: go-yaml v2 decoding into
``interface{}``, then JSON): plain scalars follow go-yaml v2's ``resolve()`` (``y``,
``yes`` and ``on`` are true; ``2024-01-01`` and ``12:30`` stay strings; ``0x1F`` and
``1_000`` are numbers); quoted scalars are strings; map keys become strings as
sigs.k8s.io/yaml writes them (``1.5`` -> ``"1.5"``, ``true`` -> ``"true"``). Values
without a JSON form (NaN, infinities) and tags other than the core ones are refused,
as Go's JSON encoder fails on them.

Bounds, checked on the parser's event stream, before anything is constructed:

============================  ============================================================
``max_bytes``  1 MiB          UTF-8 length of the text; above the API server's 1.5 MiB
                              object limit per field is never legitimate.
``max_depth``  100            nested collections; a Ray runtime env or Serve config is
                              about 10 deep, and Python's composer recurses per level.
``max_aliases``  1,000        ``*alias`` occurrences in the text (go-yaml only starts
                              counting above 100).
expanded nodes                nodes after every alias is expanded: at most
                              ``max(10,000, 10 x the nodes written)`` and never more than
                              ``max_nodes`` (1,000,000). An alias adds the whole size of
                              its anchor, computed once per anchor.
============================  ============================================================

Recursive aliases (an anchor used inside itself) are refused, as go-yaml v2 refuses
them. KubeRay's go-yaml refuses "excessive aliasing" by a ratio of aliases to decoded
nodes; ours bounds the expanded size itself, which is what a consumer pays for.

Every failure is one ``UserYamlError``: ``code`` is ``YAML_TOO_LARGE`` when a bound is
crossed and ``YAML_INVALID`` for text that is not YAML (or has no JSON form); ``line``
and ``column`` (1-based) say where, when known.
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final

import yaml
import yaml.composer
import yaml.constructor
import yaml.resolver

from operator_runtime.api._base import JSONValue
from operator_runtime.api.errors import ErrorCode, RayApiError

__all__ = ["LIMITS", "UserYamlError", "YamlLimits", "load_yaml", "load_yaml_all"]


@dataclass(frozen=True, slots=True)
class YamlLimits:
    """The bounds of one read (see the module docstring for why these values)."""

    max_bytes: int = 1 << 20
    max_depth: int = 100
    max_aliases: int = 1_000
    expansion_floor: int = 10_000
    expansion_ratio: int = 10
    max_nodes: int = 1_000_000


LIMITS: Final = YamlLimits()


class UserYamlError(RayApiError, ValueError):
    """YAML we will not read: not YAML, no JSON form, or past a bound (``code``)."""

    def __init__(
        self, code: ErrorCode, problem: str, *, line: int | None = None, column: int | None = None
    ) -> None:
        self.code = code
        self.problem = problem
        self.line = line
        self.column = column
        super().__init__(str(self))

    def __str__(self) -> str:
        if self.line is None:
            return self.problem
        return f"{self.problem} at line {self.line}, column {self.column}"


def _too_large(problem: str, mark: Any = None) -> UserYamlError:
    return _error(ErrorCode.YAML_TOO_LARGE, problem, mark)


def _error(code: ErrorCode, problem: str, mark: Any) -> UserYamlError:
    if mark is None:
        return UserYamlError(code, problem)
    return UserYamlError(code, problem, line=mark.line + 1, column=mark.column + 1)


# -- the bounds, on the event stream ---------------------------------------------------

_CORE_TAGS: Final = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("str", "int", "float", "bool", "null", "seq", "map")
) | {"!"}


class _Guard:
    """Watches each event go by; raises before a bound is crossed.

    Each open collection is a frame ``[anchor, expanded size so far]``; a finished
    one records its size under its anchor, so an alias adds that size in O(1)."""

    def __init__(self, limits: YamlLimits, size: int) -> None:
        self.limits = limits
        # The nodes written are fewer than the bytes, so this caps the expansion early.
        ceiling = max(limits.expansion_floor, limits.expansion_ratio * (size + 1))
        self.ceiling = min(limits.max_nodes, ceiling)
        self.frames: list[list[Any]] = []
        self.sizes: dict[str, int] = {}
        self.open: set[str] = set()
        self.aliases = 0
        self.written = 0
        self.expanded = 0

    def see(self, event: yaml.Event) -> None:
        if isinstance(event, yaml.AliasEvent):
            self._alias(event)
        elif isinstance(event, yaml.ScalarEvent):
            self._tag(event)
            self._node(event, 1)
        elif isinstance(event, yaml.CollectionStartEvent):
            self._tag(event)
            if len(self.frames) >= self.limits.max_depth:
                raise _too_large(
                    f"collections nest deeper than {self.limits.max_depth} levels",
                    event.start_mark,
                )
            if event.anchor is not None:
                self.open.add(event.anchor)
            self.frames.append([event.anchor, 1])
            self.written += 1
        elif isinstance(event, yaml.CollectionEndEvent):
            anchor, size = self.frames.pop()
            if anchor is not None:
                self.open.discard(anchor)
            self._add(size, event.start_mark)
            if anchor is not None:
                self.sizes[anchor] = size
        elif isinstance(event, yaml.DocumentEndEvent):
            self._check_ratio(event.start_mark)

    def _node(self, event: yaml.NodeEvent, size: int) -> None:
        self.written += 1
        self._add(size, event.start_mark)
        if event.anchor is not None:
            self.sizes[event.anchor] = size

    def _alias(self, event: yaml.AliasEvent) -> None:
        self.aliases += 1
        if self.aliases > self.limits.max_aliases:
            raise _too_large(f"more than {self.limits.max_aliases} aliases", event.start_mark)
        name = str(event.anchor)
        if name in self.open:
            raise _error(
                ErrorCode.YAML_INVALID, f"anchor {name!r} contains itself", event.start_mark
            )
        if name not in self.sizes:
            raise _error(ErrorCode.YAML_INVALID, f"unknown anchor {name!r}", event.start_mark)
        self._add(self.sizes[name], event.start_mark)

    def _add(self, size: int, mark: Any) -> None:
        if self.frames:
            self.frames[-1][1] += size
            if self.frames[-1][1] > self.ceiling:
                self._expanded_error(mark)
        else:
            self.expanded += size
            if self.expanded > self.ceiling:
                self._expanded_error(mark)

    def _check_ratio(self, mark: Any) -> None:
        allowed = max(self.limits.expansion_floor, self.limits.expansion_ratio * self.written)
        if self.expanded > min(allowed, self.limits.max_nodes):
            self._expanded_error(mark)

    def _expanded_error(self, mark: Any) -> None:
        limits = self.limits
        raise _too_large(
            f"aliases expand the document past its bound ({limits.expansion_ratio} times "
            f"the nodes written, at least {limits.expansion_floor} and at most "
            f"{limits.max_nodes} nodes)",
            mark,
        )

    def _tag(self, event: yaml.NodeEvent) -> None:
        tag = getattr(event, "tag", None)
        if tag is not None and tag not in _CORE_TAGS:
            raise _error(ErrorCode.YAML_INVALID, f"tag {tag} is not supported", event.start_mark)


# -- go-yaml v2's reading of plain scalars ---------------------------------------------

_YAML_V2_CONSTANTS: Final[dict[str, Any]] = {
    **dict.fromkeys(("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE"), True),
    **dict.fromkeys(("on", "On", "ON"), True),
    **dict.fromkeys(("n", "N", "no", "No", "NO", "false", "False", "FALSE"), False),
    **dict.fromkeys(("off", "Off", "OFF"), False),
    **dict.fromkeys(("", "~", "null", "Null", "NULL"), None),
    **dict.fromkeys((".nan", ".NaN", ".NAN"), math.nan),
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), math.inf),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), -math.inf),
}
_YAML_STYLE_FLOAT: Final = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_GO_INT: Final = re.compile(r"([-+]?)(0[xX][0-9a-fA-F]+|0[bB][01]+|0[oO]?[0-7]*|[1-9][0-9]*)")
_GO_SIMPLE_FLOAT: Final = re.compile(r"[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?")
_MERGE_TAG: Final = "tag:yaml.org,2002:merge"
_PLAIN_TAG: Final = "tag:go-yaml-v2:plain"


def _go_parse_int(text: str) -> int | None:
    """``strconv.ParseInt(text, 0, 64)``, then ``ParseUint`` for the unsigned range."""
    match = _GO_INT.fullmatch(text)
    if match is None:
        return None
    sign, digits = match.groups()
    lowered = digits.lower()
    if lowered.startswith(("0x", "0b", "0o")):
        number = int(lowered[2:], {"x": 16, "b": 2, "o": 8}[lowered[1]])
    elif len(digits) > 1 and digits.startswith("0"):
        number = int(digits, 8)
    else:
        number = int(digits)
    number = -number if sign == "-" else number
    return number if -(2**63) <= number < 2**64 and not (sign and number >= 2**63) else None


def _resolve_plain(text: str) -> Any:
    if text in _YAML_V2_CONSTANTS:
        return _YAML_V2_CONSTANTS[text]
    first = text[:1]
    if first == ".":
        if _GO_SIMPLE_FLOAT.fullmatch(text):
            return float(text)
        return text
    is_digit = first.isdigit() and first.isascii()
    if not first or (not is_digit and first not in "+-"):
        return text
    # A timestamp-looking value (YYYY-...) stays a string when decoded into interface{}.
    plain = text.replace("_", "")
    number = _go_parse_int(plain)
    if number is not None:
        return number
    if _YAML_STYLE_FLOAT.fullmatch(plain):
        parsed = float(plain)
        if math.isfinite(parsed):  # ParseFloat fails on overflow: the scalar stays a string
            return parsed
    return text


class _Loader(yaml.composer.Composer, yaml.constructor.SafeConstructor, yaml.resolver.BaseResolver):
    """PyYAML's composer and safe constructor over a guarded event stream, with go-yaml
    v2's reading of plain scalars; quoted scalars are strings, as in both."""

    def __init__(self, events: Iterator[yaml.Event]) -> None:
        self._events = events
        self._next: yaml.Event | None = None
        yaml.composer.Composer.__init__(self)
        yaml.constructor.SafeConstructor.__init__(self)
        yaml.resolver.BaseResolver.__init__(self)

    # The Parser interface the composer reads.
    def peek_event(self) -> yaml.Event | None:
        if self._next is None:
            self._next = next(self._events, None)
        return self._next

    def check_event(self, *choices: type[yaml.Event]) -> bool:
        event = self.peek_event()
        return event is not None and (not choices or isinstance(event, choices))

    def get_event(self) -> yaml.Event | None:
        event = self.peek_event()
        self._next = None
        return event

    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
        if kind is yaml.ScalarNode and implicit[0]:
            return _MERGE_TAG if value == "<<" else _PLAIN_TAG
        if kind is yaml.ScalarNode:
            return "tag:yaml.org,2002:str"
        if kind is yaml.SequenceNode:
            return "tag:yaml.org,2002:seq"
        return "tag:yaml.org,2002:map"


def _construct_plain(loader: _Loader, node: yaml.Node) -> Any:
    assert isinstance(node, yaml.ScalarNode)
    return _resolve_plain(str(loader.construct_scalar(node)))


_Loader.add_constructor(_PLAIN_TAG, _construct_plain)  # type: ignore[type-var]
# An explicit ``!!int`` or ``!!float`` reads as go-yaml reads the same plain scalar.
_Loader.add_constructor("tag:yaml.org,2002:int", _construct_plain)  # type: ignore[type-var]
_Loader.add_constructor("tag:yaml.org,2002:float", _construct_plain)  # type: ignore[type-var]

_PARSER: Final = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


# -- sigs.k8s.io/yaml: map keys as strings, JSON values only ---------------------------


def _f32(value: float) -> float:
    single: float = struct.unpack("f", struct.pack("f", value))[0]
    return single


def _go_float_key(value: float) -> str:
    """``strconv.FormatFloat(v, 'g', -1, 32)``, as go-yaml writes a float map key:
    the shortest float32 digits, exponent form below 1e-4 or from 1e6 (``1e+06``)."""
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    single = _f32(value)
    if single == 0:
        return "-0" if math.copysign(1, single) < 0 else "0"
    text = f"{single:.8e}"
    for precision in range(9):
        text = f"{single:.{precision}e}"
        if _f32(float(text)) == single:
            break
    mantissa, _, exponent_text = text.partition("e")
    exponent = int(exponent_text)
    if exponent < -4 or exponent >= 6:
        sign = "-" if exponent < 0 else "+"
        return f"{mantissa}e{sign}{abs(exponent):02d}"
    return format(Decimal(text), "f")


def _key(key: Any) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int | str):
        return str(key)
    if isinstance(key, float):
        return _go_float_key(key)
    raise UserYamlError(ErrorCode.YAML_INVALID, f"a map key of type {type(key).__name__}")


def _jsonable(value: Any) -> JSONValue:
    """``convertToJSONableObject``; the expansion is bounded, so this copy is too."""
    if isinstance(value, dict):
        return {_key(key): _jsonable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_jsonable(item) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        raise UserYamlError(ErrorCode.YAML_INVALID, f"{value} has no JSON form")
    if value is None or isinstance(value, str | int | float):
        return value
    raise UserYamlError(ErrorCode.YAML_INVALID, f"a {type(value).__name__} has no JSON form")


def _documents(text: str, limits: YamlLimits) -> Iterator[Any]:
    size = len(text)
    if size > limits.max_bytes or len(text.encode("utf-8", "surrogatepass")) > limits.max_bytes:
        raise _too_large(f"the YAML is longer than {limits.max_bytes} bytes")
    guard = _Guard(limits, size)

    def guarded() -> Iterator[yaml.Event]:
        for event in yaml.parse(text, Loader=_PARSER):
            guard.see(event)
            yield event

    loader = _Loader(guarded())
    try:
        while loader.check_node():
            yield loader.get_data()
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        problem = error.problem or error.context or "invalid YAML"
        raise _error(ErrorCode.YAML_INVALID, str(problem), mark) from None
    except yaml.YAMLError as error:
        raise UserYamlError(ErrorCode.YAML_INVALID, " ".join(str(error).split())) from None


def load_yaml(text: str, *, limits: YamlLimits = LIMITS) -> JSONValue:
    """The first document of ``text`` as KubeRay reads it (``None`` when empty); as in
    go-yaml's ``Unmarshal``, what follows it is not read."""
    for document in _documents(text, limits):
        return _jsonable(document)
    return None


def load_yaml_all(text: str, *, limits: YamlLimits = LIMITS) -> list[JSONValue]:
    """Every document of a stream (``---``-separated), empty ones as ``None``; the
    bounds apply to the stream as a whole."""
    return [_jsonable(document) for document in _documents(text, limits)]
