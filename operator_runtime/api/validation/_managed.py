"""What a user may not set because the operator sets it itself (the RocksDB volume, TLS,
the autoscaler's start command), and the feature gates such options need. Each rule
reads the same whichever feature it guards, so it is written once here."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from operator_runtime.api._base import JSONObject
from operator_runtime.api.errors import ErrorCode, Violation
from operator_runtime.api.validation._pod import find_env, mount_path, name_of


def gate_disabled(code: ErrorCode, path: str, gate: str) -> Violation:
    """The option at ``path`` is set but the operator runs with ``gate`` off."""
    option = path.rsplit(".", 1)[-1]
    return Violation(
        code,
        path,
        f"{option} is set but the {gate} gate is off",
        f"enable the gate on the operator or remove {option}",
    )


def managed_env(
    env: Sequence[JSONObject],
    names: Iterable[str],
    code: ErrorCode,
    path: str,
    *,
    when: str = "",
    fix: str | None = None,
) -> Iterator[Violation]:
    """Each of ``names`` found in ``env`` (the env list at ``path``); ``when`` says
    when the operator sets it, ``fix`` replaces the default "remove NAME"."""
    for name in names:
        found = find_env(env, name)
        if found is not None:
            yield Violation(
                code,
                f"{path}.env[{found[0]}]",
                f"{name} is managed by the operator{when}",
                fix or f"remove {name}",
            )


def managed_mounts(
    mounts: Sequence[JSONObject],
    volume: str,
    at: str,
    owner: str,
    code: ErrorCode,
    path: str,
) -> Iterator[Violation]:
    """Each mount of the operator's ``volume`` name or at its path ``at``;
    ``owner`` names the operator's mount in the message."""
    for i, mount in enumerate(mounts):
        if name_of(mount) == volume or mount_path(mount) == at:
            yield Violation(
                code,
                f"{path}.volumeMounts[{i}]",
                f"a mount named {volume} or at {at} clashes with the operator's {owner}",
                "remove this mount",
            )
