"""Go's text formats, byte for byte, where KubeRay writes them into a command line.

The submitter's ``ray job submit`` line is compared with KubeRay's as a string, so the
pieces Go produces are reproduced here: ``strconv.Quote``, ``encoding/json`` (sorted map
keys, HTML-safe escapes), ``fmt``'s ``%f`` of a float32, ``strings.TrimSpace`` and
``sigs.k8s.io/yaml.YAMLToJSON`` (go-yaml v2's YAML 1.1 scalars, read by
``operator_runtime.api.useryaml``).
"""

from __future__ import annotations

import json
import struct
import unicodedata
from typing import Any, Final

from operator_runtime.api.useryaml import load_yaml
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


def go_yaml_to_json(text: str) -> str:
    """``sigs.k8s.io/yaml.YAMLToJSON``, through the one bounded reader of user YAML;
    raises ``UserYamlError`` (a ``ValueError``) where it returns an error."""
    return go_json(load_yaml(text))
