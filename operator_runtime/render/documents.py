"""YAML text -> the documents in it: the one loader of ``render`` and the stack template.

Empty documents (a trailing ``---``, a comment-only file) are dropped; each
``kind: List`` (as ``kubectl get -o yaml`` writes) is replaced by its items. A syntax
error names the source, line and column, as editors and compilers do:
``cluster.yaml:7:15: mapping values are not allowed here; fix the YAML syntax there``.
Reading the file stays with the caller, so this module does no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import yaml

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
        return list(flatten_lists(yaml.safe_load_all(text)))
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        problem = error.problem or error.context or "invalid YAML"
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
        raise DocumentError(f"{where}: {problem}; fix the YAML syntax there") from None
    except yaml.YAMLError as error:
        raise DocumentError(f"{source}: {error}") from None
