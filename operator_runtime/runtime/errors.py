"""Errors of the runtime, shaped around what a caller should do next.

API errors are grouped by HTTP class, so ``except NotFound`` reads like the intent and
``except ClientError`` / ``except ServerError`` pick a whole class. The tree::

    ApiError                      any failed request to the API server
    ├── TransportError            no HTTP answer at all (refused, reset, timed out)
    ├── OutcomeUnknown            a create that may or may not have happened (504,
    │                             a timeout or a reset after it was sent): not retried
    ├── NotLeading                a write refused on our side: leadership has lapsed
    └── HttpError                 an HTTP answer with a failure status (``.status``)
        ├── ClientError           4xx: the request is wrong for the current state
        │   ├── BadRequest        400
        │   ├── Unauthorized      401
        │   ├── Forbidden         403
        │   ├── NotFound          404
        │   ├── MethodNotAllowed  405
        │   ├── Conflict          409  stale resourceVersion or failed precondition
        │   │   └── AlreadyExists 409  reason AlreadyExists (create of an existing name)
        │   ├── Gone              410  resourceVersion too old (compacted): relist
        │   ├── Invalid           422  the object fails validation
        │   └── TooManyRequests   429  throttled (retried by the client)
        └── ServerError           5xx (retried by the client)
            ├── InternalError     500
            ├── ServiceUnavailable 503
            └── GatewayTimeout    504

    ReconcileError                raised by a reconciler to steer the work queue
    ├── TemporaryError            retry with per-key backoff (or after ``delay``)
    └── PermanentError            do not retry; logged and counted, not requeued
        ├── InvalidName           a namespace, name or subresource no object can have,
        │                         refused before any request is built (ValueError)
        └── ForeignObject         an answer for another object than the one asked for

``InvalidName`` and ``ForeignObject`` are permanent on purpose: the name comes from a
spec, so asking again cannot help until the user changes it, and they are not an
``ApiError``, so no handler mistakes them for a failed request.

Any other exception escaping a reconciler is treated like a ``TemporaryError``;
a ``Conflict`` in particular just means "the cache was stale, try again".
"""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """A request to the API server failed."""


class TransportError(ApiError):
    """The API server did not answer: connection refused or reset, or a timeout.

    ``maybe_sent`` is False only when the request certainly never left (the
    connection could not be opened), so even a create can safely be tried again.
    """

    def __init__(self, message: str, *, maybe_sent: bool = True) -> None:
        super().__init__(message)
        self.maybe_sent = maybe_sent


class OutcomeUnknown(ApiError):
    """A non-idempotent write (a POST) whose effect is unknown: the server answered
    5xx without ``Retry-After``, or the connection timed out or broke after the request
    was sent. It may have been committed (a 504 often means "created, but late").
    Retrying could create a second object, so the client never does; the caller must
    look (a fresh LIST) before acting again. ``cause`` is the underlying error."""

    def __init__(self, message: str, *, cause: ApiError) -> None:
        super().__init__(message)
        self.cause = cause


class NotLeading(ApiError):
    """A write refused before it was sent: this process no longer holds the leader
    Lease within its renew deadline, so another replica may already be acting."""


class HttpError(ApiError):
    """The API server answered with a failure status.

    ``status`` is the HTTP code, ``reason`` the Kubernetes ``Status.reason`` (e.g.
    ``AlreadyExists``), ``body`` the decoded ``Status`` object when there was one and
    ``retry_after`` the server's ``Retry-After`` hint in seconds.
    """

    def __init__(
        self,
        status: int,
        message: str,
        *,
        reason: str = "",
        body: dict[str, Any] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{status} {reason}: {message}" if reason else f"{status}: {message}")
        self.status = status
        self.message = message
        self.reason = reason
        self.body = body or {}
        self.retry_after = retry_after


class ClientError(HttpError):
    """4xx."""


class BadRequest(ClientError):
    """400."""


class Unauthorized(ClientError):
    """401."""


class Forbidden(ClientError):
    """403."""


class NotFound(ClientError):
    """404."""


class MethodNotAllowed(ClientError):
    """405."""


class Conflict(ClientError):
    """409: the object changed since it was read, or a delete precondition failed."""


class AlreadyExists(Conflict):
    """409 with reason AlreadyExists."""


class Gone(ClientError):
    """410: the requested resourceVersion is no longer available."""


class Invalid(ClientError):
    """422."""


class TooManyRequests(ClientError):
    """429."""


class ServerError(HttpError):
    """5xx."""


class InternalError(ServerError):
    """500."""


class ServiceUnavailable(ServerError):
    """503."""


class GatewayTimeout(ServerError):
    """504."""


_BY_STATUS: dict[int, type[HttpError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    410: Gone,
    422: Invalid,
    429: TooManyRequests,
    500: InternalError,
    503: ServiceUnavailable,
    504: GatewayTimeout,
}


def error_for_status(
    status: int,
    body: dict[str, Any] | None,
    *,
    retry_after: float | None = None,
) -> HttpError:
    """The most specific error for an HTTP status and a decoded ``Status`` body."""
    body = body or {}
    reason = str(body.get("reason", ""))
    message = str(body.get("message", "")) or f"HTTP {status}"
    cls: type[HttpError]
    if status == 409 and reason == "AlreadyExists":
        cls = AlreadyExists
    elif status in _BY_STATUS:
        cls = _BY_STATUS[status]
    elif 400 <= status < 500:
        cls = ClientError
    elif status >= 500:
        cls = ServerError
    else:
        cls = HttpError
    return cls(status, message, reason=reason, body=body, retry_after=retry_after)


class ReconcileError(Exception):
    """Base of the errors a reconciler raises on purpose."""


class TemporaryError(ReconcileError):
    """Retry later: after ``delay`` seconds if given, else with per-key backoff."""

    def __init__(self, message: str, *, delay: float | None = None) -> None:
        super().__init__(message)
        self.delay = delay


class PermanentError(ReconcileError):
    """Retrying cannot help (e.g. an invalid spec); the key waits for the next change."""


class InvalidName(PermanentError, ValueError):
    """A namespace, name or subresource that no Kubernetes object can have.

    Raised by ``ResourceKind.path`` before a request exists: a name is one path
    segment, and ``..`` or ``/`` in it would reach another namespace's object (urllib3
    removes dot segments). ``field`` is ``namespace``, ``name`` or ``subresource``.
    """

    def __init__(
        self, kind: str, namespace: str | None, name: str | None, *, field: str, rule: str
    ) -> None:
        self.kind = kind
        self.namespace = namespace
        self.name = name
        self.field = field
        where = "/".join(_shown(part) for part in (namespace, name) if part is not None)
        super().__init__(f"{kind} {where}: the {field} is not {rule}; no request was sent")


class ForeignObject(PermanentError):
    """The API server answered a read with an object other than the one asked for
    (another namespace or name): it is never used on the asker's behalf."""

    def __init__(self, kind: str, asked: str, got: str) -> None:
        self.kind = kind
        self.asked = asked
        self.got = got
        super().__init__(f"{kind} {asked}: the answer is the object {got}; refused")


def _shown(value: str, limit: int = 80) -> str:
    """``value`` quoted, cut to ``limit`` characters (a name may be hostile and long)."""
    return repr(value if len(value) <= limit else value[:limit] + "...")
