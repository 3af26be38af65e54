"""Acting as another identity: a kubeconfig user's ``as``, ``as-uid``, ``as-groups`` and
``as-user-extra``, sent as the API server's ``Impersonate-*`` headers on every request
(client-go's impersonating round-tripper).

The API server checks that the operator's own identity may ``impersonate`` each of
them and then authorizes the request as the impersonated user; a request it refuses
answers 403 naming both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_TOKEN_CHARACTERS = frozenset(
    b"!#$&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
)
"""RFC 7230's token characters without ``%``: all a header name may hold."""


class ImpersonationError(ValueError):
    """A kubeconfig's impersonation fields have the wrong shape; the message names them."""


@dataclass(frozen=True)
class Impersonation:
    """Who the operator acts as; empty fields are not sent."""

    user: str = ""
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """``as-user-extra``: (key, values) pairs, keys sorted."""

    def __bool__(self) -> bool:
        return bool(self.user or self.uid or self.groups or self.extra)

    def headers(self) -> list[tuple[str, str]]:
        """The headers, one per group and per extra value (the server reads repeated
        headers as a list; a comma-joined value would be one group)."""
        headers: list[tuple[str, str]] = []
        if self.user:
            headers.append(("Impersonate-User", self.user))
        if self.uid:
            headers.append(("Impersonate-Uid", self.uid))
        headers.extend(("Impersonate-Group", group) for group in self.groups)
        for key, values in self.extra:
            name = f"Impersonate-Extra-{escape_extra_key(key)}"
            headers.extend((name, value) for value in values)
        return headers


def escape_extra_key(key: str) -> str:
    """An extra key as a header name: bytes outside the token characters (and ``%``)
    percent-encoded, which the API server decodes (``example.com/scopes`` keeps its
    ``.``, its ``/`` becomes ``%2F``)."""
    return "".join(
        chr(byte) if byte in _TOKEN_CHARACTERS else f"%{byte:02X}" for byte in key.encode()
    )


def read_impersonation(user: Mapping[str, Any], where: str) -> Impersonation:
    """The impersonation of a kubeconfig ``user`` entry (``where`` names it)."""

    def string(key: str) -> str:
        value = user.get(key)
        if value is None:
            return ""
        if not isinstance(value, str):
            raise ImpersonationError(f"{where} {key}: not a string")
        return value

    groups = user.get("as-groups") or []
    if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
        raise ImpersonationError(f"{where} as-groups: not a list of strings")
    extra = user.get("as-user-extra") or {}
    if not isinstance(extra, dict) or not all(
        isinstance(k, str) and isinstance(v, list) and all(isinstance(i, str) for i in v)
        for k, v in extra.items()
    ):
        raise ImpersonationError(f"{where} as-user-extra: not a map of strings to lists of strings")
    impersonation = Impersonation(
        user=string("as"), uid=string("as-uid"), groups=tuple(groups),
        extra=tuple((key, tuple(extra[key])) for key in sorted(extra)),
    )  # fmt: skip
    if (impersonation.uid or impersonation.groups or impersonation.extra) and not (
        impersonation.user
    ):
        # The API server refuses groups, a uid or extras without a user to act as.
        raise ImpersonationError(f"{where}: as-groups, as-uid and as-user-extra need as")
    return impersonation
