"""What an Event says about an object that does not parse into its model."""

from __future__ import annotations

import pydantic


def describe_parse_error(exc: pydantic.ValidationError) -> str:
    """Where and why the object does not parse, without the offending values: an
    Event is readable by anyone who may list Events in the namespace, and a value
    can be a secret (a password in ``rayStartParams``, an env value)."""
    problems = []
    for error in exc.errors(include_url=False, include_input=False, include_context=False):
        path = ".".join(str(part) for part in error["loc"]) or "<root>"
        problems.append(f"{path}: {error['msg']}")
    return "; ".join(problems)
