"""How a controller declares one API permission next to the step that uses it. The
operator's permission table (``render/operator_permissions.py``) is generated from these
declarations by ``python -m operator_runtime.controllers.permission_table``."""

from __future__ import annotations

from typing import Final, Protocol

from operator_runtime.render import Permission


class Need(Protocol):
    """``need(group, resource, verbs, why, only_with="")``: one resource of one API group,
    ``only_with`` a feature gate or an operator flag without which the need never arises."""

    def __call__(
        self, group: str, resource: str, verbs: tuple[str, ...], why: str, only_with: str = ""
    ) -> Permission: ...


def declarer(controller: str, only_with: str = "") -> Need:
    """The ``need`` of one controller, naming it in every permission it declares; with
    ``only_with``, every need of the controller comes only with that gate or flag."""
    default = only_with

    def need(
        group: str, resource: str, verbs: tuple[str, ...], why: str, only_with: str = ""
    ) -> Permission:
        return Permission(controller, group, (resource,), verbs, why, only_with or default)

    return need


_manager_need: Final = declarer("manager")
MANAGER_NEEDS: Final = (
    # runtime/leader.py; granted in a Role of the operator's own namespace, never
    # cluster-wide (components/operator/rbac.py): it watches its one Lease to hear a release.
    _manager_need(
        "coordination.k8s.io", "leases", ("get", "list", "watch", "create", "update"),
        "leader election",
    ),
    # runtime/events.py: events.k8s.io/v1, or core/v1 where that is not served.
    _manager_need("events.k8s.io", "events", ("create", "patch"), "events"),
    _manager_need("", "events", ("create", "patch"), "events where events.k8s.io/v1 is not served"),
)  # fmt: skip
"""What the manager itself uses, beside its controllers."""
