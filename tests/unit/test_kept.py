"""``tests.kept``: a worker hands a module's kept service (a Ray head, Kueue) on to its
next module that wants one alike, and stops it when it cannot be made fresh, nothing
wants it, or the session ends.

The heads here are plain objects: what is tested is the handing-on, not Ray (the
integration tier runs it on real heads)."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import ClassVar

import pytest

from tests import kept, rayhead


@pytest.fixture(autouse=True)
def no_keepers() -> Iterator[None]:
    """The session's own keepers (this worker's kept head) out of the way, and each
    test's keepers' sessions ended with the test."""
    saved = dict(kept._keepers)
    kept._keepers.clear()
    yield
    while Heads.made:
        Heads.made.pop()._session.close()
    kept._keepers.clear()
    kept._keepers.update(saved)


class Heads:
    """Starts numbered heads and records what was reset and stopped; its keeper is a
    session fixture's body, driven by hand (``end_session``)."""

    made: ClassVar[list[Heads]] = []

    def __init__(self, fixture: str = "head", fresh: bool | Exception = True) -> None:
        self.started = 0
        self.stopped: list[int] = []
        self.reset: list[int] = []
        self.fresh = fresh
        self._session = kept.keeping(fixture)
        self.keeper = next(self._session)
        Heads.made.append(self)

    def start(self) -> int:
        self.started += 1
        return self.started

    def stop(self, head: int) -> None:
        self.stopped.append(head)

    def reset_to_fresh(self, head: int) -> bool:
        self.reset.append(head)
        if isinstance(self.fresh, Exception):
            raise self.fresh
        return self.fresh

    def module(self) -> int:
        """One module's use of the fixture: set up, then torn down."""
        body = self.keeper.kept(self.start, stop=self.stop, reset=self.reset_to_fresh)
        head = next(body)
        with pytest.raises(StopIteration):
            next(body)
        return head

    def end_session(self) -> None:
        with pytest.raises(StopIteration):
            next(self._session)


def test_the_next_module_gets_the_same_head_reset_and_the_last_one_stops_it() -> None:
    heads = Heads()
    assert [heads.module(), heads.module(), heads.module()] == [1, 1, 1]
    assert heads.started == 1
    assert heads.reset == [1, 1, 1]  # after each module, before the next
    assert heads.stopped == []

    kept.stop_unwanted({"namespace", "local_cluster"})
    assert heads.stopped == [1]
    assert heads.module() == 2  # nothing kept any more: a new head


def test_a_module_that_wants_the_head_keeps_it_and_each_fixture_keeps_its_own() -> None:
    plain, serve = Heads("head"), Heads("serve")
    plain.module()
    serve.module()
    kept.stop_unwanted(name for name in ["head", "namespace"])  # as the root conftest
    assert (plain.stopped, serve.stopped) == ([], [1])


def test_the_session_end_stops_what_is_kept_and_forgets_the_keeper() -> None:
    kueue, head = Heads("kueue"), Heads("head")
    kueue.module()
    head.module()
    kueue.end_session()
    assert (kueue.stopped, head.stopped) == ([1], [])
    assert set(kept._keepers) == {"head"}
    head.end_session()
    assert head.stopped == [1]
    assert kept._keepers == {}


def test_a_keeper_with_nothing_kept_stops_nothing() -> None:
    heads = Heads()
    heads.keeper.stop()
    heads.end_session()
    assert heads.stopped == []


@pytest.mark.parametrize("fresh", [False, RuntimeError("dashboard gone")])
def test_a_head_that_cannot_be_made_fresh_is_stopped_not_handed_on(
    fresh: bool | Exception, capsys: pytest.CaptureFixture[str]
) -> None:
    heads = Heads(fresh=fresh)
    assert heads.module() == 1
    assert heads.stopped == [1]
    assert heads.module() == 2
    heads.end_session()
    assert heads.stopped == [1, 2]
    if isinstance(fresh, Exception):
        assert "dashboard gone" in capsys.readouterr().out


def test_a_stopped_head_is_not_handed_on() -> None:
    """``serving`` stops a head whose Serve would not shut down; the reset then says no
    without asking the dead dashboard anything."""
    exited = SimpleNamespace(process=SimpleNamespace(poll=lambda: -9))
    assert rayhead.forget_jobs(exited) is False  # type: ignore[arg-type]
