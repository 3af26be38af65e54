"""YAML text -> the documents in it: the one loader of ``render`` and the stack template.

Empty documents (a trailing ``---``, a comment-only file) are dropped; each
``kind: List`` (as ``kubectl get -o yaml`` writes) is replaced by its items. A syntax
error names the source, line and column, as editors and compilers do:
``cluster.yaml:7:15: mapping values are not allowed in this context; fix the YAML syntax
there [YAML_INVALID]``.
The text is read by ``operator_runtime.api.useryaml`` (as kubectl reads it, within
bounds). Reading the file stays with the caller, so this module does no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from operator_runtime.api.errors import ErrorCode
from operator_runtime.api.useryaml import UserYamlError, load_yaml_all

__all__ = ["DocumentError", "flatten_lists", "load_documents"]


class DocumentError(ValueError):
    """YAML that cannot be parsed; ``str()`` is ``<source>:<line>:<column>: <problem>``."""


def flatten_lists(documents: Iterable[object]) -> Iterator[object]:
    """The documents of a YAML stream with each ``kind: List`` replaced by its items
    (as ``kubectl get -o yaml`` writes them) and empty documents dropped."""
    for document in documents:
        if isinstance(document, dict) and document.get("kind") == "List":
            yield from document.get("items") or ()
        elif document is not None:
            yield document


def load_documents(text: str, source: str) -> list[object]:
    """Every document of ``text`` (see the module docstring); ``source`` names it in
    errors (a path, or ``<stdin>``)."""
    try:
        return list(flatten_lists(load_yaml_all(text)))
    except UserYamlError as error:
        where = f"{source}:{error.line}:{error.column}" if error.line is not None else source
        fix = (
            "fix the YAML syntax there"
            if error.code is ErrorCode.YAML_INVALID
            else ("write it out with fewer aliases, less nesting or fewer bytes")
        )
        raise DocumentError(f"{where}: {error.problem}; {fix} [{error.code.value}]") from None
