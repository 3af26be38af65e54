"""A typed-enough client for any kind: plain dicts in, plain dicts out.

Every request passes a token bucket (``--qps``/``--burst``; with ``BucketPerKind``, as
the operator runs, each kind of object has its own, as KubeRay's have), carries a
timeout, and is retried with exponential backoff on 429 and 5xx (honouring
``Retry-After``); a GET is also retried when the connection fails. Writes that fail to
connect are not retried here: the reconcile is requeued instead, and being
level-triggered it re-reads the state before acting again. Failures raise the errors of
``errors.py``.

A create (POST) is not idempotent: a 504 or a timeout after sending may mean the object
was made, and a ``generateName`` create sent again makes a second one. So a POST is
retried only where the server said it did nothing (429, or any answer carrying
``Retry-After``); any other 5xx, and a timeout or reset once the request may have left,
raise ``OutcomeUnknown`` for the caller to resolve by looking (a fresh LIST).

Two hooks serve leader election: ``set_write_gate`` refuses every write (``NotLeading``)
once the gate says leadership has lapsed, and ``bounded(deadline)`` is a view for the
Lease's own requests: one attempt, no limiter queue, socket timeouts cut so the request
ends by the deadline, and no gate. ``with_own_limiter`` is a view with a token bucket of
its own, for Events: client-go writes them through a client of their own too, so
diagnostics never take the tokens the controllers' creates wait for.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final, Literal

from operator_runtime.runtime.clock import Clock, SystemClock
from operator_runtime.runtime.errors import (
    ApiError,
    ForeignObject,
    HttpError,
    NotFound,
    NotLeading,
    OutcomeUnknown,
    ServerError,
    TooManyRequests,
    TransportError,
    error_for_status,
)
from operator_runtime.runtime.kinds import KindRegistry, Object, ResourceKind
from operator_runtime.runtime.ratelimit import BucketPerKind, TokenBucket
from operator_runtime.runtime.transport import Stream, Transport, decode_json

Objects = list[Object]
PatchType = Literal["merge", "json", "strategic", "apply"]
_PATCH_CONTENT_TYPES: dict[str, str] = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",
}
RequestObserver = Callable[[str, str, float], None]
"""Called after each request with (verb, status code or "error", seconds)."""
WriteGate = Callable[[], bool]
"""Asked before each write; False refuses it with ``NotLeading``."""
LIST_PAGE_SIZE: Final = 100
"""Items per page of ``list_all``. A page is decoded whole before an informer's
projection trims it, and CPython keeps the memory of that peak: with client-go's 500,
a start that listed 10,000 Ray pods (about 6 KB of JSON each) left the operator 24 MiB
larger for good (benchmarks/README.md, ``operator_rss.py``: 135.0 -> 110.6 MiB, started
no slower). 100 costs one request per 100 objects, and bounds a page of a tenant's large
objects (up to 1.5 MiB each in etcd) to a fifth of what 500 allowed."""


@dataclass(frozen=True)
class RetryPolicy:
    """Backoff for retriable answers: ``base * 2**attempt`` capped, ``attempts`` tries."""

    attempts: int = 5
    base: float = 0.2
    cap: float = 5.0
    max_retry_after: float = 30.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after)
        return min(self.base * 2.0**attempt, self.cap)


class KubeClient:
    """get/list/create/update/patch/delete/watch for any ``ResourceKind``."""

    def __init__(
        self,
        transport: Transport,
        *,
        kinds: KindRegistry | None = None,
        limiter: TokenBucket | BucketPerKind | None = None,
        retry: RetryPolicy | None = None,
        timeout: float = 30.0,
        connect_timeout: float = 5.0,
        field_manager: str = "ray-operator",
        observe: RequestObserver | None = None,
        clock: Clock | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._transport = transport
        self.kinds = kinds or KindRegistry()
        if not self.kinds.has_discovery:
            self.kinds.set_discovery(self._discover)
        self._limiter: TokenBucket | BucketPerKind = limiter or TokenBucket(100, 200, clock=clock)
        self._retry = retry or RetryPolicy()
        self._timeout = (connect_timeout, timeout)
        self.field_manager = field_manager
        self._observe = observe
        self._clock = clock or SystemClock()
        self._sleep = sleep
        self._write_gate: WriteGate | None = None
        self._deadline: float | None = None
        self._hooks: KubeClient = self
        """Whose observer and write gate apply (a view follows its parent's, even when
        they are set after the view was made)."""

    def set_observer(self, observe: RequestObserver | None) -> None:
        self._observe = observe

    def set_write_gate(self, gate: WriteGate | None) -> None:
        """Refuse writes (``NotLeading``) whenever ``gate()`` is False: a replica whose
        Lease may have passed to another must not act, even mid-reconcile."""
        self._write_gate = gate

    def with_own_limiter(self) -> KubeClient:
        """A view sharing this client's connections, observer and write gate, with a
        token bucket of its own at the same qps and burst."""
        view = copy.copy(self)
        view._limiter = TokenBucket(self._limiter.qps, self._limiter.burst, clock=self._clock)
        return view

    def bounded(self, deadline: float) -> KubeClient:
        """A view sharing this client's connections whose requests all end by
        ``deadline`` (this client's monotonic clock): one attempt each, no rate-limiter
        queue, no write gate. Used to renew the Lease, where a late answer is useless."""
        view = copy.copy(self)
        view._retry = RetryPolicy(attempts=1)
        view._limiter = TokenBucket(0, 1)
        view._write_gate = None
        view._hooks = view
        view._deadline = deadline
        return view

    def _timeouts(self) -> tuple[float, float]:
        if self._deadline is None:
            return self._timeout
        remaining = self._deadline - self._clock.monotonic()
        if remaining <= 0.01:
            raise TransportError("deadline passed before the request was sent", maybe_sent=False)
        connect = min(self._timeout[0], remaining / 2)
        return connect, min(self._timeout[1], remaining - connect)

    # -- plumbing ---------------------------------------------------------------------

    def _call(
        self,
        verb: str,
        method: str,
        path: str,
        *,
        kind: ResourceKind | None,
        query: list[tuple[str, str]] | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> Any:
        payload = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": content_type} if payload is not None else {}
        attempt = 0
        while True:
            gate = self._hooks._write_gate
            if method != "GET" and gate is not None and not gate():
                raise NotLeading(f"{verb} {path}: not the leader (Lease not renewed in time)")
            self._bucket(kind).wait()
            started = self._clock.monotonic()
            try:
                response = self._transport.request(
                    method, path, query=query or [], body=payload, headers=headers,
                    timeout=self._timeouts(),
                )  # fmt: skip
            except TransportError as exc:
                self._record(verb, "error", started)
                if method == "POST" and exc.maybe_sent:
                    raise OutcomeUnknown(f"{verb} {path}: {exc}", cause=exc) from exc
                if method != "GET" or attempt + 1 >= self._retry.attempts:
                    raise
                self._sleep(self._retry.delay(attempt, None))
                attempt += 1
                continue
            self._record(verb, str(response.status), started)
            if response.status < 400:
                return response.json()
            error = error_for_status(
                response.status, _decode_status(response.body),
                retry_after=_retry_after(response.headers),
            )  # fmt: skip
            if not _retriable(method, error) or attempt + 1 >= self._retry.attempts:
                raise _outcome(method, verb, path, error)
            self._sleep(self._retry.delay(attempt, error.retry_after))
            attempt += 1

    def _bucket(self, kind: ResourceKind | None) -> TokenBucket:
        """The token bucket a request on ``kind`` (None: discovery) waits for."""
        if isinstance(self._limiter, BucketPerKind):
            return self._limiter.bucket(f"{kind.api_version}/{kind.kind}" if kind else "")
        return self._limiter

    def _record(self, verb: str, code: str, started: float) -> None:
        observe = self._hooks._observe
        if observe is not None:
            observe(verb, code, self._clock.monotonic() - started)

    def _discover(self, api_version: str) -> list[Object]:
        path = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
        resources: list[Object] = self._call("discovery", "GET", path, kind=None).get(
            "resources", []
        )
        return resources

    def serves(self, api_version: str, plural: str) -> bool:
        """Whether the API server serves a resource (used to pick an Events API)."""
        try:
            return any(r.get("name") == plural for r in self._discover(api_version))
        except NotFound:
            return False

    # -- reads ------------------------------------------------------------------------

    def get(self, kind: ResourceKind, name: str, namespace: str | None = None) -> Object:
        """The object; ``ForeignObject`` if the answer is another one (see ``_same``)."""
        result: Object = self._call("get", "GET", kind.path(namespace, name), kind=kind)
        _same(kind, namespace, name, result)
        return result

    def find(self, kind: ResourceKind, name: str, namespace: str | None = None) -> Object | None:
        """``get``, with None for an object that does not exist."""
        try:
            return self.get(kind, name, namespace)
        except NotFound:
            return None

    def list(
        self,
        kind: ResourceKind,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
        resource_version: str | None = None,
    ) -> Object:
        """One page of a list: the List object with ``items`` and ``metadata``."""
        query = _selectors(label_selector, field_selector)
        if limit:
            query.append(("limit", str(limit)))
        if continue_token:
            query.append(("continue", continue_token))
        if resource_version is not None:
            query.append(("resourceVersion", resource_version))
        result: Object = self._call("list", "GET", kind.path(namespace), kind=kind, query=query)
        # Items of a List carry no apiVersion/kind; fill them in so every cached object
        # can be written back as is (update() resolves the kind from the object).
        for item in result.get("items") or ():
            item.setdefault("apiVersion", kind.api_version)
            item.setdefault("kind", kind.kind)
            _same(kind, namespace, None, item)
        return result

    def list_all(
        self,
        kind: ResourceKind,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = LIST_PAGE_SIZE,
        transform: Callable[[Object], Object] | None = None,
    ) -> tuple[Objects, str]:
        """All items (paginated) and the list's resourceVersion, to watch from.

        ``transform`` is applied page by page, so an informer's projection keeps peak
        memory to one page of full objects rather than the whole list.
        """
        items: Objects = []
        token: str | None = None
        while True:
            page = self.list(
                kind, namespace, label_selector=label_selector, field_selector=field_selector,
                limit=page_size, continue_token=token,
            )  # fmt: skip
            page_items = page.get("items") or []
            items.extend(page_items if transform is None else map(transform, page_items))
            metadata = page.get("metadata") or {}
            # Dropped before the next page is read, or two pages of full objects would
            # be alive at once.
            del page, page_items
            token = metadata.get("continue")
            if not token:
                return items, str(metadata.get("resourceVersion", ""))

    def watch(
        self,
        kind: ResourceKind,
        namespace: str | None,
        *,
        resource_version: str,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int = 300,
        inactivity_timeout: float = 70.0,
    ) -> WatchStream:
        """Open a watch with bookmarks. The read timeout doubles as an inactivity
        timeout: no event and no bookmark for ``inactivity_timeout`` seconds breaks the
        stream with ``TransportError`` so the caller reconnects."""
        query = [
            *_selectors(label_selector, field_selector),
            ("watch", "true"),
            ("allowWatchBookmarks", "true"),
            ("resourceVersion", resource_version),
            ("timeoutSeconds", str(timeout_seconds)),
        ]
        self._bucket(kind).wait()
        started = self._clock.monotonic()
        try:
            stream = self._transport.stream(
                kind.path(namespace), query=query,
                timeout=(self._timeout[0], inactivity_timeout),
            )  # fmt: skip
        except TransportError:
            self._record("watch", "error", started)
            raise
        self._record("watch", str(stream.status), started)
        if stream.status >= 400:
            body = stream.read_all()
            stream.close()
            raise error_for_status(stream.status, _decode_status(body))
        return WatchStream(stream)

    # -- writes -----------------------------------------------------------------------

    def create(self, obj: Object, *, dry_run: bool = False) -> Object:
        kind = self.kinds.for_object(obj)
        namespace = obj.get("metadata", {}).get("namespace")
        query = [("fieldManager", self.field_manager)] + ([("dryRun", "All")] if dry_run else [])
        result: Object = self._call(
            "create", "POST", kind.path(namespace), kind=kind, query=query, body=obj
        )
        return result

    def update(self, obj: Object, *, subresource: str | None = None) -> Object:
        """PUT; ``metadata.resourceVersion`` in ``obj`` makes it conditional (409 if stale)."""
        kind = self.kinds.for_object(obj)
        metadata = obj["metadata"]
        path = kind.path(metadata.get("namespace"), metadata["name"], subresource)
        query = [("fieldManager", self.field_manager)]
        result: Object = self._call("update", "PUT", path, kind=kind, query=query, body=obj)
        return result

    def update_status(self, obj: Object) -> Object:
        return self.update(obj, subresource="status")

    def patch(
        self,
        kind: ResourceKind,
        name: str,
        namespace: str | None,
        patch: Any,
        *,
        patch_type: PatchType = "merge",
        subresource: str | None = None,
        resource_version: str | None = None,
        force: bool = False,
    ) -> Object:
        """Merge, JSON or strategic patch, or server-side apply (``patch_type="apply"``).

        ``resource_version`` turns a merge patch into a conditional write (409 if the
        object changed since it was read); for a JSON patch add a ``test`` op instead.
        """
        if resource_version is not None and patch_type in ("merge", "strategic", "apply"):
            patch = {**patch, "metadata": {**patch.get("metadata", {}),
                                           "resourceVersion": resource_version}}  # fmt: skip
        query = [("fieldManager", self.field_manager)]
        if patch_type == "apply" and force:
            query.append(("force", "true"))
        path = kind.path(namespace, name, subresource)
        result: Object = self._call(
            "patch", "PATCH", path, kind=kind, query=query, body=patch,
            content_type=_PATCH_CONTENT_TYPES[patch_type],
        )  # fmt: skip
        return result

    def apply(self, obj: Object, *, force: bool = True, subresource: str | None = None) -> Object:
        """Server-side apply of a full intent object with this client's field manager."""
        kind = self.kinds.for_object(obj)
        metadata = obj["metadata"]
        return self.patch(
            kind, metadata["name"], metadata.get("namespace"), obj,
            patch_type="apply", force=force, subresource=subresource,
        )  # fmt: skip

    def delete(
        self,
        kind: ResourceKind,
        name: str,
        namespace: str | None = None,
        *,
        propagation_policy: Literal["Background", "Foreground", "Orphan"] = "Background",
        uid: str | None = None,
        resource_version: str | None = None,
        grace_period_seconds: int | None = None,
    ) -> Object | None:
        """Delete; ``uid``/``resource_version`` are preconditions (409 when they fail),
        so we never delete a namesake that replaced the object we looked at."""
        options: Object = {
            "apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": propagation_policy,
        }  # fmt: skip
        preconditions = {
            key: value for key, value in (("uid", uid), ("resourceVersion", resource_version))
            if value is not None
        }  # fmt: skip
        if preconditions:
            options["preconditions"] = preconditions
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        result: Object | None = self._call(
            "delete", "DELETE", kind.path(namespace, name), kind=kind, body=options
        )
        return result


class WatchStream:
    """Iterates watch events (``{"type": ..., "object": {...}}``); close to stop early."""

    def __init__(self, stream: Stream) -> None:
        self._stream = stream

    def __iter__(self) -> Iterator[Object]:
        for line in self._stream.lines():
            event: Object = decode_json(line)
            yield event

    def close(self) -> None:
        self._stream.close()


def _same(kind: ResourceKind, namespace: str | None, name: str | None, obj: Object) -> None:
    """Refuse an answer that is not the object (or in the namespace) asked for.

    What a controller reads on behalf of a spec it may then write back (an update
    takes its path from the object), so an object from elsewhere, however it came
    (a path the server or a proxy resolved differently), must never reach it.
    """
    metadata = obj.get("metadata") or {}
    got_namespace = str(metadata.get("namespace") or "")
    got_name = str(metadata.get("name") or "")
    wrong_namespace = kind.namespaced and bool(namespace) and got_namespace != namespace
    if wrong_namespace or (name is not None and got_name != name):
        asked = f"{namespace}/{name or '*'}" if namespace else str(name or "*")
        got = f"{got_namespace}/{got_name}" if got_namespace else got_name
        raise ForeignObject(kind.kind, asked, got)


def _retriable(method: str, error: HttpError) -> bool:
    """Whether sending ``method`` again after ``error`` is safe and may help."""
    if method == "POST":  # only where the server says it did nothing
        return isinstance(error, TooManyRequests) or error.retry_after is not None
    return isinstance(error, TooManyRequests | ServerError)


def _outcome(method: str, verb: str, path: str, error: HttpError) -> ApiError:
    """The error to raise: a 5xx to a create without ``Retry-After`` may have created."""
    if method == "POST" and isinstance(error, ServerError) and error.retry_after is None:
        return OutcomeUnknown(f"{verb} {path}: {error}", cause=error)
    return error


def _selectors(label_selector: str | None, field_selector: str | None) -> list[tuple[str, str]]:
    query: list[tuple[str, str]] = []
    if label_selector:
        query.append(("labelSelector", label_selector))
    if field_selector:
        query.append(("fieldSelector", field_selector))
    return query


def _decode_status(body: bytes) -> dict[str, Any] | None:
    try:
        decoded = json.loads(body) if body else None
    except ValueError:
        return {"message": body[:200].decode(errors="replace")}
    return decoded if isinstance(decoded, dict) else None


def _retry_after(headers: Any) -> float | None:
    value = None
    for key, item in dict(headers).items():
        if key.lower() == "retry-after":
            value = item
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
