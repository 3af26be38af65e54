"""Go's text formats, byte for byte, where KubeRay writes them into a command line.

The submitter's ``ray job submit`` line is compared with KubeRay's as a string, so the
pieces Go produces are reproduced here: ``strconv.Quote``, ``encoding/json`` (sorted map
keys, HTML-safe escapes), ``fmt``'s ``%f`` of a float32, ``strings.TrimSpace`` and
``sigs.k8s.io/yaml.YAMLToJSON`` (go-yaml v2's YAML 1.1 scalars, not PyYAML's).
"""

from __future__ import annotations

import json
import math
import re
import struct
import unicodedata
from decimal import Decimal
from typing import Any, Final

import yaml

from operator_runtime.render._json import go_json_float

_SHORT_ESCAPES: Final = {
    "\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v",
}  # fmt: skip


def _go_is_print(char: str) -> bool:
    # strconv.IsPrint: letters, marks, numbers, punctuation, symbols and ASCII space.
    return char == " " or unicodedata.category(char)[0] in "LMNPS"


def go_quote(text: str) -> str:
    """``strconv.Quote``: double quotes; ``\\"`` and ``\\\\``; printable runes as they
    are; ``\\n``-style escapes; other runes as ``\\xNN`` (below U+0020 and DEL),
    ``\\uNNNN`` or ``\\UNNNNNNNN``; a lone surrogate becomes ``\\ufffd``."""
    out = ['"']
    for char in text:
        code = ord(char)
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif 0xD800 <= code <= 0xDFFF:
            out.append("\\ufffd")
        elif _go_is_print(char):
            out.append(char)
        elif char in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[char])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


_HTML_SAFE: Final = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"}


def _go_json_string(text: str) -> str:
    # Python and Go agree on \" \\ \b \f \n \r \t and lowercase \u00XX; Go also escapes
    # <, >, & (HTMLEscape) and U+2028/U+2029, and writes other non-ASCII as is.
    encoded = json.dumps(text, ensure_ascii=False)
    for char, escape in _HTML_SAFE.items():
        encoded = encoded.replace(char, escape)
    return encoded.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def go_json(value: Any) -> str:
    """``json.Marshal`` of a decoded JSON/YAML value: maps with sorted keys, no spaces,
    Go's float format; NaN or an infinity raises ``ValueError`` as Go's encoder fails."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_json_float(value)
    if isinstance(value, str):
        return _go_json_string(value)
    if isinstance(value, dict):
        items = (f"{_go_json_string(k)}:{go_json(value[k])}" for k in sorted(value))
        return "{" + ",".join(items) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(go_json(item) for item in value) + "]"
    raise ValueError(f"{type(value).__name__} has no JSON form")


def go_format_f32(value: float) -> str:
    """``fmt.Sprintf("%f", float32(value))``: six decimals of the float32 value."""
    as_f32: float = struct.unpack("f", struct.pack("f", value))[0]
    return f"{as_f32:f}"


# unicode.IsSpace: Python's str.strip() also strips U+001C..U+001F, Go's does not.
_GO_SPACE: Final = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006" + (
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


def go_trim_space(text: str) -> str:
    """``strings.TrimSpace``."""
    return text.strip(_GO_SPACE)


# go-yaml v2's resolve(): what a plain (unquoted) scalar means.
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


class _GoYamlV2Loader(yaml.SafeLoader):
    """PyYAML's parser with go-yaml v2's reading of plain scalars (``y`` is true, ``1e3``
    a float, timestamps stay strings); quoted scalars are strings, as in both."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
        if kind is yaml.ScalarNode and implicit[0]:
            return _MERGE_TAG if value == "<<" else _PLAIN_TAG
        result: str = super().resolve(kind, value, implicit)  # type: ignore[no-untyped-call]
        return result


def _construct_plain(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    assert isinstance(node, yaml.ScalarNode)
    return _resolve_plain(str(loader.construct_scalar(node)))


_GoYamlV2Loader.add_constructor(_PLAIN_TAG, _construct_plain)


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


def _jsonable(value: Any) -> Any:
    """``convertToJSONableObject``: map keys become strings as sigs.k8s.io/yaml does."""
    if isinstance(value, dict):
        converted: dict[str, Any] = {}
        for key, item in value.items():
            if isinstance(key, bool):
                name = "true" if key else "false"
            elif isinstance(key, int | str):
                name = str(key)
            elif isinstance(key, float):
                name = _go_float_key(key)
            else:
                raise ValueError(f"unsupported map key of type {type(key).__name__}: {key!r}")
            converted[name] = _jsonable(item)
        return converted
    if isinstance(value, list):
        return [_jsonable(item) for item in value]
    return value


def go_yaml_to_json(text: str) -> str:
    """``sigs.k8s.io/yaml.YAMLToJSON``; raises ``ValueError`` where it returns an error."""
    try:
        decoded = yaml.load(text, Loader=_GoYamlV2Loader)
    except yaml.YAMLError as error:
        raise ValueError(f"not valid YAML: {error}") from None
    return go_json(_jsonable(decoded))
