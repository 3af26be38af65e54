"""How a controller declares one API permission next to the step that uses it; the
operator's ClusterRole is checked against these declarations (render/rbac.py)."""

from __future__ import annotations

from collections.abc import Callable

from operator_runtime.render import Permission

Need = Callable[[str, str, tuple[str, ...], str], Permission]
"""``need(group, resource, verbs, why)``: one resource of one API group."""


def declarer(controller: str) -> Need:
    """The ``need`` of one controller, naming it in every permission it declares."""

    def need(group: str, resource: str, verbs: tuple[str, ...], why: str) -> Permission:
        return Permission(controller, group, (resource,), verbs, why)

    return need
