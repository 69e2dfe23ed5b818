"""A block's head in ``show``: its local day, zone and clock (``Renderer._clock``)
and a settle's lag (``render._between``), held to what ``astimezone`` says of
each time, in zones whose offsets are half and quarter hours, change in the
middle of a UTC hour, or were once off a whole minute.

``_clock`` asks the zone rules once per UTC hour whose every time has the same
zone, and works out its minutes and seconds from that: these tests check that
the shortcut says what asking for every time would, at and around each change
of offset.
"""

from __future__ import annotations

import os
import time
from datetime import datetime, timedelta
from contextlib import contextmanager
from typing import Any, Iterator

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agent_transcript.cli.render import Renderer, _between
from agent_transcript.cli.style import Style, local_time

ZONES = ["UTC", "Europe/Berlin", "America/St_Johns", "Australia/Lord_Howe", "Asia/Kathmandu", "Africa/Monrovia",
         "Pacific/Apia", "America/Sao_Paulo", "Europe/Dublin"]


@contextmanager
def in_zone(name: str) -> Iterator[None]:
    """TZ set to ``name`` (time.tzset) for the block, and put back after."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = name
    time.tzset()
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = before
        time.tzset()


def asked(ts: Any) -> tuple[str, str, str] | None:
    """The head's (day, zone, clock) of ``ts``, the zone rules asked for it alone."""
    when = local_time(ts)
    if when is None:
        return None
    return (when.strftime("%Y-%m-%d"), when.strftime("%Z"),
            f"{when.hour:02d}:{when.minute:02d}:{when.second:02d}.{when.microsecond // 1000:03d}")


def ts_of(when: datetime) -> str:
    return (f"{when.year:04d}-{when.month:02d}-{when.day:02d}T{when.hour:02d}:{when.minute:02d}:{when.second:02d}"
            f".{when.microsecond:06d}Z")


TIMES = st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30))
STEPS = st.lists(st.timedeltas(min_value=timedelta(0), max_value=timedelta(hours=3)), min_size=1, max_size=40)


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(ZONES), start=TIMES, steps=STEPS)
@example(name="America/St_Johns", start=datetime(2026, 3, 8, 5, 29, 59, 999999), steps=[timedelta(microseconds=1)])
@example(name="America/St_Johns", start=datetime(2026, 11, 1, 4, 0), steps=[timedelta(minutes=29, seconds=59)] * 3)
@example(name="Asia/Kathmandu", start=datetime(9999, 12, 30, 23, 0), steps=[timedelta(minutes=20)] * 3)
@example(name="Africa/Monrovia", start=datetime(1972, 1, 6, 23, 0), steps=[timedelta(minutes=15)] * 8)
@example(name="Africa/Monrovia", start=datetime(1970, 6, 1, 12, 0, 10), steps=[timedelta(seconds=1)] * 4)
def test_a_head_s_clock_is_what_the_zone_rules_say_of_each_time(
        name: str, start: datetime, steps: list[timedelta]) -> None:
    with in_zone(name):
        renderer = Renderer(Style(False), 100)
        when = start
        for step in steps:
            when = min(when + step, datetime(9999, 12, 31, 23, 59, 59, 999999))
            ts = ts_of(when)
            assert renderer._clock(ts) == asked(ts), ts


def test_every_minute_of_a_year_with_offset_changes_in_the_middle_of_an_hour() -> None:
    with in_zone("America/St_Johns"):  # -03:30, changed at 05:30 and 04:30 UTC
        renderer = Renderer(Style(False), 100)
        start = datetime(2026, 1, 1)
        for minute in range(0, 366 * 24 * 60, 7):
            ts = ts_of(start + timedelta(minutes=minute, seconds=minute % 60, microseconds=minute))
            assert renderer._clock(ts) == asked(ts), ts


@pytest.mark.parametrize("ts", ["2026-02-30T00:00:00.000000Z", "9999-12-31T23:59:59.999999Z",
                                "0001-01-01T00:00:00.000000Z", "2026-01-01T00:00:00Z", "yesterday", 5, None])
def test_a_time_the_rules_cannot_place_is_none_as_before(ts: Any) -> None:
    with in_zone("Asia/Kathmandu"):
        renderer = Renderer(Style(False), 100)
        for known in ("9999-12-31T23:00:00.000000Z", "2026-02-28T00:10:00.000000Z", "0001-01-01T00:30:00.000000Z"):
            renderer._clock(known)  # the hours are known before
        assert renderer._clock(ts) == asked(ts)


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(ZONES), t0=TIMES, t1=TIMES)
@example(name="Asia/Kathmandu", t0=datetime(9999, 12, 31, 23), t1=datetime(9999, 12, 31, 23, 30))
@example(name="America/St_Johns", t0=datetime(1, 1, 1), t1=datetime(1, 1, 1, 0, 0, 1))
def test_a_settle_s_lag_is_the_difference_of_the_local_times(name: str, t0: datetime, t1: datetime) -> None:
    with in_zone(name):
        a, b = ts_of(t0), ts_of(t1)
        local0, local1 = local_time(a), local_time(b)
        expected = None if local0 is None or local1 is None else (local1 - local0).total_seconds()
        assert _between(a, b) == expected
        assert _between(a, "not a time") is None and _between(None, b) is None


def test_a_new_renderer_after_tzset_uses_the_new_zone() -> None:
    ts = "2026-07-01T12:00:00.000000Z"
    with in_zone("UTC"):
        assert Renderer(Style(False), 100)._clock(ts) == ("2026-07-01", "UTC", "12:00:00.000")
    with in_zone("Europe/Berlin"):
        assert Renderer(Style(False), 100)._clock(ts) == ("2026-07-01", "CEST", "14:00:00.000")
