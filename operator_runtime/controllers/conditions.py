"""``metav1.Condition`` lists as the API server stores them (plain dicts), with the
semantics of apimachinery's ``meta.SetStatusCondition``: a condition's
``lastTransitionTime`` moves only when its status does."""

from __future__ import annotations

from collections.abc import Sequence

from operator_runtime.runtime.kinds import Object


def find(conditions: Sequence[Object], type_: str) -> Object | None:
    return next((c for c in conditions if c.get("type") == type_), None)


def is_true(conditions: Sequence[Object], type_: str) -> bool:
    found = find(conditions, type_)
    return found is not None and found.get("status") == "True"


def set_condition(
    conditions: list[Object],
    type_: str,
    status: str,
    reason: str,
    message: str,
    now: str,
    *,
    observed_generation: int | None = None,
) -> None:
    """Add or change one condition; the transition time moves only with the status."""
    existing = find(conditions, type_)
    if existing is None:
        existing = {"type": type_, "status": status, "lastTransitionTime": now}
        conditions.append(existing)
    elif existing.get("status") != status:
        existing["status"] = status
        existing["lastTransitionTime"] = now
    existing["reason"] = reason
    existing["message"] = message
    if observed_generation is not None:
        existing["observedGeneration"] = observed_generation


def remove_condition(conditions: list[Object], type_: str) -> None:
    conditions[:] = [c for c in conditions if c.get("type") != type_]
