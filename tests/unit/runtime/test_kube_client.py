"""The client's retry, timeout and error mapping, against a scripted transport."""

from __future__ import annotations

import json
from typing import Any

import pytest

from operator_runtime.runtime import errors
from operator_runtime.runtime.client import KubeClient, RetryPolicy
from operator_runtime.runtime.clock import FakeClock
from operator_runtime.runtime.kinds import CONFIG_MAP, LEASE, POD, RAY_CLUSTER, KindRegistry
from operator_runtime.runtime.ratelimit import BucketPerKind, TokenBucket
from operator_runtime.runtime.transport import Response, _UrllibStream


class ScriptedTransport:
    """Answers requests from a list of responses (or exceptions), recording them."""

    def __init__(self, *answers: Response | Exception) -> None:
        self.answers = list(answers)
        self.requests: list[dict[str, Any]] = []

    def request(self, method: str, path: str, *, query: list[tuple[str, str]],
                body: bytes | None, headers: dict[str, str],
                timeout: tuple[float, float]) -> Response:  # fmt: skip
        self.requests.append({"method": method, "path": path, "query": dict(query),
                              "body": json.loads(body) if body else None,
                              "headers": headers, "timeout": timeout})  # fmt: skip
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def stream(self, path: str, **kwargs: Any) -> Any:
        raise NotImplementedError


def ok(body: dict[str, Any]) -> Response:
    return Response(200, json.dumps(body).encode())


def status(code: int, reason: str = "", headers: dict[str, str] | None = None) -> Response:
    body = {"kind": "Status", "code": code, "reason": reason, "message": f"m{code}"}
    return Response(code, json.dumps(body).encode(), headers or {})


def named(name: str, namespace: str = "ns", **fields: Any) -> dict[str, Any]:
    """An answer for ``namespace/name``: the client refuses one for another object."""
    return {"metadata": {"name": name, "namespace": namespace}, **fields}


def make(transport: ScriptedTransport, **kwargs: Any) -> tuple[KubeClient, list[float], list[Any]]:
    slept: list[float] = []
    observed: list[Any] = []
    client = KubeClient(
        transport, sleep=slept.append, clock=FakeClock(),
        limiter=TokenBucket(0, 1, clock=FakeClock()),
        observe=lambda *args: observed.append(args), **kwargs,
    )  # fmt: skip
    return client, slept, observed


def test_429_is_retried_after_the_servers_retry_after() -> None:
    transport = ScriptedTransport(status(429, "TooManyRequests", {"Retry-After": "3"}),
                                  ok(named("p", kind="Pod")))  # fmt: skip
    client, slept, observed = make(transport)
    assert client.get(POD, "p", "ns") == named("p", kind="Pod")
    assert slept == [3.0]
    assert [(verb, code) for verb, code, _ in observed] == [("get", "429"), ("get", "200")]


def test_5xx_backs_off_exponentially_and_gives_up_after_the_attempts() -> None:
    transport = ScriptedTransport(*[status(503) for _ in range(4)])
    client, slept, _ = make(transport, retry=RetryPolicy(attempts=4, base=0.1, cap=0.3))
    with pytest.raises(errors.ServiceUnavailable):
        client.get(POD, "p", "ns")
    assert slept == [0.1, 0.2, 0.3]


@pytest.mark.parametrize(
    ("code", "reason", "error"),
    [(404, "NotFound", errors.NotFound), (409, "Conflict", errors.Conflict),
     (409, "AlreadyExists", errors.AlreadyExists), (410, "Expired", errors.Gone),
     (422, "Invalid", errors.Invalid), (403, "Forbidden", errors.Forbidden)],
)  # fmt: skip
def test_client_errors_are_not_retried_and_map_to_their_class(
    code: int, reason: str, error: type[Exception]
) -> None:
    client, slept, _ = make(ScriptedTransport(status(code, reason)))
    with pytest.raises(error) as caught:
        client.get(POD, "p", "ns")
    assert slept == []
    assert isinstance(caught.value, errors.ClientError)


def test_a_failed_connection_is_retried_for_reads_but_not_for_writes() -> None:
    client, slept, _ = make(ScriptedTransport(errors.TransportError("reset"), ok(named("p"))))
    client.get(POD, "p", "ns")
    assert len(slept) == 1
    client, _, _ = make(ScriptedTransport(errors.TransportError("refused", maybe_sent=False)))
    with pytest.raises(errors.TransportError):
        client.create(CREATED)
    client, _, _ = make(ScriptedTransport(errors.TransportError("refused", maybe_sent=False)))
    with pytest.raises(errors.TransportError):
        client.update({**CREATED, "metadata": {"name": "x", "namespace": "ns"}})


CREATED = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "x-",
                                                                  "namespace": "ns"}}  # fmt: skip


@pytest.mark.parametrize(
    "answer",
    [status(504, "Timeout"), status(500, "InternalError"), status(503),
     errors.TransportError("read timed out"), errors.TransportError("connection reset")],
    ids=["504", "500", "503-without-retry-after", "read-timeout", "reset-after-send"],
)  # fmt: skip
def test_a_create_whose_outcome_is_unknown_is_never_sent_again(answer: Any) -> None:
    # The server may have made the object: a second generateName POST makes a second one.
    transport = ScriptedTransport(answer, ok({"metadata": {"name": "x-2"}}))
    client, slept, _ = make(transport)
    with pytest.raises(errors.OutcomeUnknown) as caught:
        client.create(CREATED)
    assert len(transport.requests) == 1
    assert slept == []
    assert isinstance(caught.value.cause, errors.ApiError)


@pytest.mark.parametrize(
    "answer",
    [status(429, "TooManyRequests"), status(503, headers={"Retry-After": "1"}),
     status(500, headers={"Retry-After": "2"})],
    ids=["429", "503-retry-after", "500-retry-after"],
)  # fmt: skip
def test_a_create_is_retried_where_the_server_says_it_did_nothing(answer: Response) -> None:
    transport = ScriptedTransport(answer, ok({"metadata": {"name": "x-1"}}))
    client, _, _ = make(transport)
    assert client.create(CREATED)["metadata"]["name"] == "x-1"
    assert [r["method"] for r in transport.requests] == ["POST", "POST"]


def test_idempotent_writes_are_still_retried_on_5xx() -> None:
    transport = ScriptedTransport(status(504, "Timeout"), ok({"metadata": {"name": "x"}}))
    client, _, _ = make(transport)
    client.update({**CREATED, "metadata": {"name": "x", "namespace": "ns"}})
    assert [r["method"] for r in transport.requests] == ["PUT", "PUT"]


def test_the_write_gate_refuses_writes_but_not_reads() -> None:
    transport = ScriptedTransport(ok(named("p")))
    client, _, _ = make(transport)
    client.set_write_gate(lambda: False)
    with pytest.raises(errors.NotLeading):
        client.create(CREATED)
    client.get(POD, "p", "ns")
    assert [r["method"] for r in transport.requests] == ["GET"]


def test_a_bounded_view_makes_one_attempt_that_ends_by_the_deadline() -> None:
    clock = FakeClock()
    transport = ScriptedTransport(status(503), ok({}))
    client = KubeClient(transport, clock=clock, sleep=lambda _: None, timeout=30,
                        limiter=TokenBucket(1, 1, clock=clock), connect_timeout=5)  # fmt: skip
    client.set_write_gate(lambda: False)
    view = client.bounded(clock.monotonic() + 4.0)
    with pytest.raises(errors.ServiceUnavailable):
        view.get(LEASE, "l", "ns")
    assert transport.requests[0]["timeout"] == (2.0, 2.0), "connect + read fit in 4 s"
    clock.advance(3.0)
    view.update({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                 "metadata": {"name": "l", "namespace": "ns"}})  # fmt: skip
    assert transport.requests[1]["timeout"] == (0.5, 0.5)
    clock.advance(1.0)
    with pytest.raises(errors.TransportError) as caught:
        view.get(LEASE, "l", "ns")
    assert not caught.value.maybe_sent


def test_a_view_with_its_own_limiter_shares_the_parents_observer_and_gate() -> None:
    clock = FakeClock()
    slept: list[float] = []
    transport = ScriptedTransport(ok(named("a")), ok({}), ok(named("b")))
    client = KubeClient(transport, clock=clock, sleep=slept.append,
                        limiter=TokenBucket(1, 1, clock=clock, sleep=slept.append))  # fmt: skip
    events = client.with_own_limiter()
    observed: list[str] = []
    client.set_observer(lambda verb, _code, _seconds: observed.append(verb))
    client.get(POD, "a", "ns")
    events.create(CREATED)
    assert slept == [], "the view's bucket is its own: no wait for the parent's next token"
    client.get(POD, "b", "ns")
    assert slept == [1.0]
    assert observed == ["get", "create", "get"], "hooks set after the view was made apply"
    client.set_write_gate(lambda: False)
    with pytest.raises(errors.NotLeading):
        events.create(CREATED)


def test_every_request_carries_a_timeout_and_the_limiter_is_consulted() -> None:
    transport = ScriptedTransport(ok(named("a")), ok(named("b")))
    slept: list[float] = []
    client = KubeClient(transport, limiter=TokenBucket(1, 1, clock=FakeClock(), sleep=slept.append),
                        timeout=7, connect_timeout=2, sleep=slept.append)  # fmt: skip
    client.get(POD, "a", "ns")
    client.get(POD, "b", "ns")
    assert [r["timeout"] for r in transport.requests] == [(2, 7), (2, 7)]
    assert slept == [1.0], "the second request waited for a token"


def test_each_kind_has_a_bucket_of_its_own_and_a_status_write_shares_its_kinds() -> None:
    """``BucketPerKind``, as the operator runs (KubeRay's client-go buckets are per kind)."""
    clock = FakeClock()
    slept: list[float] = []
    transport = ScriptedTransport(*[ok(named(n)) for n in ("a", "b", "c", "d")], ok({}))
    per_kind = BucketPerKind(TokenBucket(1, 1, clock=clock, sleep=slept.append))
    client = KubeClient(transport, clock=clock, sleep=slept.append, limiter=per_kind)
    client.get(POD, "a", "ns")
    client.get(RAY_CLUSTER, "b", "ns")
    client.get(CONFIG_MAP, "c", "ns")
    assert slept == [], "a pod's token is not a RayCluster's or a ConfigMap's"
    client.get(POD, "d", "ns")
    assert slept == [1.0], "the second pod request waited for its kind's next token"
    client.patch(RAY_CLUSTER, "b", "ns", {"status": {}}, subresource="status")
    assert slept == [1.0, 1.0], "a status write spends its kind's tokens"


def test_paths_and_patch_types() -> None:
    transport = ScriptedTransport(*[ok({}) for _ in range(5)])
    client, _, _ = make(transport)
    client.patch(RAY_CLUSTER, "c", "ns", {"status": {"state": "ready"}}, subresource="status",
                 resource_version="41")  # fmt: skip
    client.patch(CONFIG_MAP, "m", "ns", [{"op": "add", "path": "/data/a", "value": "1"}],
                 patch_type="json")  # fmt: skip
    client.apply({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                  "metadata": {"name": "l", "namespace": "ns"}})  # fmt: skip
    client.delete(POD, "p", "ns", uid="u1", resource_version="9", propagation_policy="Foreground")
    client.list(POD, None, label_selector="ray.io/cluster=c")
    merge, json_patch, apply, delete, listing = transport.requests
    assert merge["path"] == "/apis/ray.io/v1/namespaces/ns/rayclusters/c/status"
    assert merge["headers"]["Content-Type"] == "application/merge-patch+json"
    assert merge["body"]["metadata"]["resourceVersion"] == "41"
    assert json_patch["headers"]["Content-Type"] == "application/json-patch+json"
    assert json_patch["path"] == "/api/v1/namespaces/ns/configmaps/m"
    assert apply["headers"]["Content-Type"] == "application/apply-patch+yaml"
    assert apply["query"] == {"fieldManager": "ray-operator", "force": "true"}
    assert apply["path"] == LEASE.path("ns", "l")
    assert delete["body"]["preconditions"] == {"uid": "u1", "resourceVersion": "9"}
    assert delete["body"]["propagationPolicy"] == "Foreground"
    assert listing["path"] == "/api/v1/pods"
    assert listing["query"]["labelSelector"] == "ray.io/cluster=c"


def test_list_all_follows_continue_tokens() -> None:
    transport = ScriptedTransport(
        ok({"items": [named("x", a=1)], "metadata": {"continue": "t1", "resourceVersion": "5"}}),
        ok({"items": [named("y", b=2)], "metadata": {"resourceVersion": "6"}}),
    )
    client, _, _ = make(transport)
    items, version = client.list_all(POD, "ns", page_size=1)
    assert [(item.get("a"), item.get("b")) for item in items] == [(1, None), (None, 2)]
    assert version == "6"
    assert transport.requests[1]["query"]["continue"] == "t1"


def test_unknown_kinds_are_discovered_once() -> None:
    discovery = {"resources": [
        {"name": "widgets/status", "kind": "Widget", "namespaced": True},
        {"name": "widgets", "kind": "Widget", "namespaced": True},
    ]}  # fmt: skip
    transport = ScriptedTransport(ok(discovery), ok({}), ok({}))
    client, _, _ = make(transport, kinds=KindRegistry())
    widget = {"apiVersion": "example.com/v1", "kind": "Widget",
              "metadata": {"name": "w", "namespace": "ns"}}  # fmt: skip
    client.create(widget)
    client.create(widget)
    assert [r["path"] for r in transport.requests] == [
        "/apis/example.com/v1",
        "/apis/example.com/v1/namespaces/ns/widgets",
        "/apis/example.com/v1/namespaces/ns/widgets",
    ]


def test_list_items_get_their_api_version_and_kind() -> None:
    # The API server omits TypeMeta on List items; cached objects must be writable.
    transport = ScriptedTransport(ok({"items": [named("a")], "metadata": {}}))
    client, _, _ = make(transport)
    [item] = client.list(RAY_CLUSTER, "ns")["items"]
    assert (item["apiVersion"], item["kind"]) == ("ray.io/v1", "RayCluster")


class _ClosedByTheReader:
    """A response the watch's reader thread is closing at the same moment (what http.client
    raises then, seen when the operator stopped mid-watch under load)."""

    status = 200
    closed = False

    def shutdown(self) -> None:
        raise ValueError("I/O operation on closed file.")

    def close(self) -> None:
        self.closed = True
        raise ValueError("I/O operation on closed file.")


def test_closing_a_watch_the_reader_is_closing_too_is_not_an_error() -> None:
    response = _ClosedByTheReader()
    stream = _UrllibStream(response)  # type: ignore[arg-type]
    stream.close()
    assert response.closed
