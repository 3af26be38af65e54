"""tests/waiting.py: a wait that took a while says how long; a quick one says nothing; a
timeout says on one line what it waited for and what was seen."""

from __future__ import annotations

import re
import time

import pytest

from tests import waiting


def test_a_long_wait_is_printed_with_its_length_and_a_quick_one_is_not(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(waiting, "REPORTED_SECONDS", 0.2)
    assert waiting.wait_for("at once", lambda: "yes") == "yes"
    ready_at = time.monotonic() + 0.3
    assert waiting.wait_for("a while", lambda: time.monotonic() >= ready_at, interval=0.05)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and re.fullmatch(r"waited \d+\.\d s for a while", lines[0]), lines


def test_a_timeout_names_what_was_awaited_and_what_was_seen() -> None:
    with pytest.raises(AssertionError, match=r"timed out after 0.1s waiting for never; "
                       r"last seen: stuck"):  # fmt: skip
        waiting.wait_for("never", lambda: False, timeout=0.1, interval=0.02,
                         explain=lambda: "stuck")  # fmt: skip


def test_a_timeout_while_a_source_reports_names_it_on_the_same_line() -> None:
    def source() -> str:
        return "the operator's last lines: ['x']"

    waiting.report_also(source)
    try:
        with pytest.raises(AssertionError) as inside:
            waiting.wait_for("never", lambda: False, timeout=0.05, interval=0.02,
                             explain=lambda: "stuck")  # fmt: skip
    finally:
        waiting.stop_reporting(source)
    with pytest.raises(AssertionError) as after:
        waiting.wait_for("never", lambda: False, timeout=0.05, interval=0.02)
    assert str(inside.value) == ("timed out after 0.05s waiting for never; last seen: stuck; "
                                 "the operator's last lines: ['x']")  # fmt: skip
    assert str(after.value) == "timed out after 0.05s waiting for never"


def test_what_a_test_left_registered_is_dropped_after_it_and_an_earlier_source_stays() -> None:
    def earlier() -> str:
        return "the module's operator"

    waiting.report_also(earlier)
    try:
        with waiting.one_tests_sources():
            waiting.report_also(lambda: "an operator the test killed")  # never stopped
        with pytest.raises(AssertionError) as caught:
            waiting.wait_for("never", lambda: False, timeout=0.05, interval=0.02)
    finally:
        waiting.stop_reporting(earlier)
    assert str(caught.value) == "timed out after 0.05s waiting for never; the module's operator"


def test_stopping_a_source_the_test_end_dropped_already_is_nothing() -> None:
    def source() -> str:
        return "an operator killed in an earlier test"

    with waiting.one_tests_sources():
        waiting.report_also(source)
    waiting.stop_reporting(source)  # its OperatorProcess exits late: no error
    with pytest.raises(AssertionError) as caught:
        waiting.wait_for("never", lambda: False, timeout=0.05, interval=0.02)
    assert str(caught.value) == "timed out after 0.05s waiting for never"
