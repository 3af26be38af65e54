"""``tests.kept``: a worker hands a module's kept service (a Ray head, Kueue) on to its
next module that wants one alike, and stops it when it cannot be made fresh or nothing
wants it.

The heads here are plain objects: what is tested is the handing-on, not Ray (the
integration tier runs it on real heads)."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from tests import kept, rayhead


@pytest.fixture(autouse=True)
def nothing_kept() -> Iterator[None]:
    saved = dict(kept._kept)
    kept._kept.clear()
    yield
    kept._kept.clear()
    kept._kept.update(saved)


class Heads:
    """Starts numbered heads and records what was reset and stopped."""

    def __init__(self, fresh: bool | Exception = True) -> None:
        self.started = 0
        self.stopped: list[int] = []
        self.reset: list[int] = []
        self.fresh = fresh

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

    def module(self, fixture: str = "head") -> int:
        """One module's use of the fixture: set up, then torn down."""
        body = kept.kept(fixture, self.start, stop=self.stop, reset=self.reset_to_fresh)
        head = next(body)
        with pytest.raises(StopIteration):
            next(body)
        return head


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
    plain, serve = Heads(), Heads()
    plain.module("head")
    serve.module("serve")
    kept.stop_unwanted({"head", "namespace"})
    assert (plain.stopped, serve.stopped) == ([], [1])
    kept.stop_unwanted(())  # the session's end
    assert plain.stopped == [1]


@pytest.mark.parametrize("fresh", [False, RuntimeError("dashboard gone")])
def test_a_head_that_cannot_be_made_fresh_is_stopped_not_handed_on(
    fresh: bool | Exception, capsys: pytest.CaptureFixture[str]
) -> None:
    heads = Heads(fresh)
    assert heads.module() == 1
    assert heads.stopped == [1]
    assert heads.module() == 2
    if isinstance(fresh, Exception):
        assert "dashboard gone" in capsys.readouterr().out


def test_a_stopped_head_is_not_handed_on() -> None:
    """``serving`` stops a head whose Serve would not shut down; the reset then says no
    without asking the dead dashboard anything."""
    exited = SimpleNamespace(process=SimpleNamespace(poll=lambda: -9))
    assert rayhead.forget_jobs(exited) is False  # type: ignore[arg-type]


def test_stop_kept_stops_only_the_one_named_and_only_if_kept() -> None:
    kueue, head = Heads(), Heads()
    kueue.module("kueue")
    head.module("head")
    kept.stop_kept("kueue")
    kept.stop_kept("kueue")  # no longer kept: nothing to stop
    assert (kueue.stopped, head.stopped) == ([1], [])
    kept.stop_unwanted(x for x in ["head"])  # a generator, as the root conftest passes
    assert head.stopped == []
