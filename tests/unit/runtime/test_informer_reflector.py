"""The reflector loop against a scripted client: resume, 410 relist, error events."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator
from typing import Any

from operator_runtime.runtime.errors import Gone, TransportError
from operator_runtime.runtime.informer import Informer
from operator_runtime.runtime.kinds import CONFIG_MAP


def cm(name: str, rv: str, **data: str) -> dict[str, Any]:
    metadata = {"name": name, "namespace": "ns", "resourceVersion": rv}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}


class Stream:
    def __init__(self, events: list[dict[str, Any]], then: Exception | None = None) -> None:
        self.events = events
        self.then = then

    def __iter__(self) -> Iterator[dict[str, Any]]:
        yield from self.events
        if self.then is not None:
            raise self.then

    def close(self) -> None:
        pass


class ScriptedClient:
    """Each list/watch call takes the next scripted answer; records what was asked."""

    def __init__(self, lists: list[Any], watches: list[Any]) -> None:
        self.lists = lists
        self.watches = watches
        self.watched_from: list[str] = []
        self.done = threading.Event()

    def list_all(self, kind: Any, namespace: Any, **kwargs: Any) -> Any:
        answer = self.lists.pop(0)
        transform = kwargs.get("transform") or (lambda obj: obj)
        return [transform(obj) for obj in answer[0]], answer[1]

    def watch(self, kind: Any, namespace: Any, *, resource_version: str, **kwargs: Any) -> Any:
        self.watched_from.append(resource_version)
        if not self.watches:
            self.done.set()
            threading.Event().wait(10)  # park the reflector until the test stops it
            raise TransportError("stopped")
        answer = self.watches.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def run(client: ScriptedClient) -> tuple[Informer, list[tuple[str, str]], list[str]]:
    events: list[tuple[str, str]] = []
    reasons: list[str] = []
    informer = Informer(client, CONFIG_MAP, namespaces=("ns",),  # type: ignore[arg-type]
                        on_restart=lambda kind, reason: reasons.append(reason))  # fmt: skip
    informer.add_handler(lambda kind, obj, old: events.append((kind, obj["metadata"]["name"])))
    informer.start()
    assert client.done.wait(10), "the script ran to its end"
    informer._stop.set()
    return informer, events, reasons


def test_a_dropped_watch_resumes_from_the_last_resource_version_seen() -> None:
    client = ScriptedClient(
        lists=[([cm("a", "5")], "10")],
        watches=[
            Stream(
                [
                    {"type": "MODIFIED", "object": cm("a", "11", v="2")},
                    {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "15"}}},
                ],
                then=TransportError("connection reset"),
            ),
        ],
    )
    informer, events, reasons = run(client)
    assert client.watched_from == ["10", "15"], "resume after the bookmark, no relist"
    assert events == [("ADDED", "a"), ("MODIFIED", "a")]
    assert reasons == ["error"]
    assert informer.has_synced()


def test_410_relists_and_the_diff_reports_what_changed_meanwhile() -> None:
    client = ScriptedClient(
        lists=[
            ([cm("keep", "1"), cm("gone", "2"), cm("changed", "3")], "10"),
            ([cm("keep", "1"), cm("changed", "30"), cm("new", "31")], "40"),
        ],
        watches=[Stream([{"type": "ERROR", "object": {"kind": "Status", "code": 410}}])],
    )
    informer, events, reasons = run(client)
    assert reasons == ["gone"]
    assert client.watched_from == ["10", "40"]
    assert sorted(events[3:]) == [("ADDED", "new"), ("DELETED", "gone"), ("MODIFIED", "changed")]
    assert sorted(o["metadata"]["name"] for o in informer.cache.list()) == [
        "changed",
        "keep",
        "new",
    ]


def test_a_410_on_the_watch_request_itself_also_relists() -> None:
    client = ScriptedClient(
        lists=[([cm("a", "1")], "10"), ([cm("a", "1")], "20")],
        watches=[Gone(410, "Expired")],
    )
    _, events, reasons = run(client)
    assert reasons == ["gone"]
    assert client.watched_from == ["10", "20"]
    assert events == [("ADDED", "a")], "an unchanged object is not reported again"


def test_repeated_410s_back_off_instead_of_relisting_in_a_loop() -> None:
    client = ScriptedClient(
        lists=[([], "10"), ([], "20"), ([], "30")],
        watches=[Gone(410, "Expired"), Gone(410, "Expired")],
    )
    listed_at: list[float] = []
    list_all = client.list_all

    def timed_list_all(kind: Any, namespace: Any, **kwargs: Any) -> Any:
        listed_at.append(time.monotonic())
        return list_all(kind, namespace, **kwargs)

    client.list_all = timed_list_all  # type: ignore[method-assign]
    _, _, reasons = run(client)
    assert reasons == ["gone", "gone"]
    gaps = [b - a for a, b in itertools.pairwise(listed_at)]
    assert gaps[0] >= 0.5 * 0.8 and gaps[1] >= 1.0 * 0.8, gaps


class QuietStream:
    """A watch with no event until it is closed (the socket's shutdown wakes the read)."""

    def __init__(self) -> None:
        self.closed = threading.Event()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        self.closed.wait(30)
        return iter(())

    def close(self) -> None:
        self.closed.set()


def test_a_stop_while_the_watch_is_being_opened_ends_the_reflector_at_once() -> None:
    """stop() closes the streams it sees; one still being opened then is not among them,
    and its quiet watch would hold the reflector until its inactivity timeout."""
    opening, stopped = threading.Event(), threading.Event()
    stream = QuietStream()

    class SlowWatch(ScriptedClient):
        def watch(self, kind: Any, namespace: Any, **kwargs: Any) -> Any:
            opening.set()
            stopped.wait(10)  # the stop comes while the request is in flight
            return stream

    informer = Informer(SlowWatch(lists=[([], "1")], watches=[]), CONFIG_MAP,  # type: ignore[arg-type]
                        namespaces=("ns",))  # fmt: skip
    informer.start()
    assert opening.wait(10)
    stopper = threading.Thread(target=informer.stop, kwargs={"timeout": 30})
    stopper.start()
    while not informer._stop.is_set():  # stop() began: it reads the streams right after
        time.sleep(0.01)
    time.sleep(0.1)
    stopped.set()
    started = time.monotonic()
    stopper.join(30)
    assert time.monotonic() - started < 5, "the reflector waited on its quiet watch"
    assert stream.closed.is_set()
