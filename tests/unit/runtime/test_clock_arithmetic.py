"""``clock.later``: time arithmetic on values a spec or a status controls never raises."""

from __future__ import annotations

import datetime

import pytest

from operator_runtime.api.common import INT32_MAX
from operator_runtime.runtime.clock import later

NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
END = datetime.datetime.max.replace(tzinfo=datetime.UTC)
START = datetime.datetime.min.replace(tzinfo=datetime.UTC)


def test_an_ordinary_sum() -> None:
    assert later(NOW, 90) == NOW + datetime.timedelta(seconds=90)
    assert later(NOW, INT32_MAX) == NOW + datetime.timedelta(seconds=INT32_MAX)


@pytest.mark.parametrize(
    ("moment", "seconds", "expected"),
    [
        (datetime.datetime(9999, 12, 31, tzinfo=datetime.UTC), INT32_MAX, END),
        (NOW, 1e14, END),  # timedelta itself refuses more than 999999999 days
        (NOW, float("inf"), END),
        (datetime.datetime(1, 1, 2, tzinfo=datetime.UTC), -(2**31), START),
    ],
    ids=["int32-near-the-end", "1e14", "infinite", "before-year-1"],
)
def test_sums_past_the_calendar_are_held_at_its_end(
    moment: datetime.datetime, seconds: float, expected: datetime.datetime
) -> None:
    assert later(moment, seconds) == expected
