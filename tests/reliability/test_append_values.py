"""Scenario 8: the values an append is handed.

Refused with the precise exception, before a byte is written (the file is
unchanged), the session still usable: NaN and infinities, non-``str`` keys,
nesting deeper than the reader allows, ints over 4300 digits, bytes, sets,
arbitrary objects, a list that contains itself.

Accepted and read back equal after a reload: lone surrogates (in text and
keys), a huge string (5 MB here, 100 MB under ``AT_LONG=1``), 4300-digit ints,
the deepest nesting allowed, every code point of every Unicode plane, and —
with hypothesis — any JSON value the writer accepts.

Depth: the reader allows 512 nested containers in a line; the envelope and the
payload are two of them, so a message's ``content`` (or a grants snapshot) may
nest 510 deep, and 511 is refused. ``canonical_json`` alone allows 512.
"""

from __future__ import annotations

import decimal
import math
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_transcript import Message, Session, canonical_json
from rkit import LONG, figure, same_json, scale

MAX_IN_MESSAGE = 510


def nest(depth: int) -> Any:
    value: Any = "core"
    for _ in range(depth):
        value = [value]
    return value


def self_containing() -> list[Any]:
    loop: list[Any] = []
    loop.append(loop)
    return loop


class Thing:
    pass


REFUSED: list[tuple[str, Any, type[Exception]]] = [
    ("nan", math.nan, ValueError),
    ("inf", math.inf, ValueError),
    ("-inf", -math.inf, ValueError),
    ("nan in a list", [1, {"a": math.nan}], ValueError),
    ("int key", {1: "a"}, TypeError),
    ("None key", {None: "a"}, TypeError),
    ("tuple key", {(1, 2): "a"}, TypeError),
    ("nested int key", {"a": [{"b": {2: 3}}]}, TypeError),
    ("nesting 511 in a message", nest(MAX_IN_MESSAGE + 1), ValueError),
    ("nesting 2000", nest(2000), ValueError),
    ("self-containing list", self_containing(), ValueError),
    ("4301-digit int", 10**4300, ValueError),
    ("-4301-digit int", -(10**4300), ValueError),
    ("bytes", b"bytes", TypeError),
    ("bytearray", bytearray(b"x"), TypeError),
    ("set", {1, 2}, TypeError),
    ("frozenset", frozenset([1]), TypeError),
    ("object", object(), TypeError),
    ("instance", Thing(), TypeError),
    ("complex", 1j, TypeError),
    ("Decimal", decimal.Decimal("1.5"), TypeError),
    ("type", int, TypeError),
    ("function", len, TypeError),
]


@pytest.mark.parametrize(("name", "value", "error"), REFUSED, ids=[r[0] for r in REFUSED])
def test_refused_before_a_byte_is_written(tmp_path: Path, name: str, value: Any,
                                          error: type[Exception]) -> None:
    path = tmp_path / "run.jsonl"
    with Session.create(path) as s:
        kept = s.append_message(Message.user("before"))
        before = path.read_bytes()
        attempts = [
            lambda: s.append_message(Message.user(value)),
            lambda: s.append_message(Message.user("x"), {"extra": value}),
            lambda: s.append_grants(value),
            lambda: s.append_tool_dispatched("c", "t", value),
            lambda: s.append_run_context([], [("fact", value)]),
        ]
        for attempt in attempts:
            with pytest.raises(Exception) as e:
                attempt()
            assert type(e.value) is error, (name, e.value)
            assert path.read_bytes() == before
            assert s.message_ids == [kept] and len(s.events) == 2
        after = s.append_message(Message.user("after"))  # still usable
    with Session.load(path) as s:
        assert s.message_ids == [kept, after] and s.warnings == []


def test_create_refuses_a_bad_meta_and_writes_nothing(tmp_path: Path) -> None:
    for value, error in [({"x": math.nan}, ValueError), ({1: 2}, TypeError), ({"b": b"x"}, TypeError)]:
        path = tmp_path / "run.jsonl"
        with pytest.raises(error):
            Session.create(path, value)
        assert not path.exists()


def every_code_point() -> str:
    """Every code point once; a surrogate is followed by a "." so that no high
    surrogate is right before a low one (see the test of that pair below)."""
    return "".join(chr(c) + "." if 0xD800 <= c <= 0xDFFF else chr(c) for c in range(0x110000))


ACCEPTED: list[tuple[str, Any]] = [
    ("lone surrogates", ["\ud800", "a\udfffb", "\udbff \udc00", "\udc00\ud800", "\ud800\ud800"]),
    ("surrogate keys", {"\ud800": 1, "k\udfff": {"\udc00": "\ud83d"}}),
    ("4300-digit ints", [10**4300 - 1, -(10**4300 - 1), 2**64, -(2**63) - 1]),
    ("floats", [0.1, -0.0, 5e-324, 1.7976931348623157e308, 1e-7, 1e16, 123456789.125]),
    ("deepest in a message", nest(MAX_IN_MESSAGE)),
    ("controls", "".join(chr(c) for c in range(0x20)) + "\x7f\u2028\u2029\ufeff\"\\/"),
    ("every plane, every code point", every_code_point()),
    ("empty things", [{}, [], "", None, True, False, 0]),
]


@pytest.mark.parametrize(("name", "value"), ACCEPTED, ids=[a[0] for a in ACCEPTED])
def test_accepted_and_read_back_equal(tmp_path: Path, name: str, value: Any) -> None:
    path = tmp_path / "run.jsonl"
    with Session.create(path, {"meta": value}) as s:
        mid = s.append_message(Message.user(value), {"extra": value})
        s.append_grants(value)
        assert same_json(s.events[-2].payload["content"], value)
    with Session.load(path) as s:
        assert same_json(s.meta, {"meta": value})
        assert same_json(s.messages[0].content, value)
        assert same_json(s.events[1].payload["extra"], value)
        assert same_json(s.grants, value)
        assert s.message_ids == [mid]
    assert same_json(Session.peek(path).messages[0].content, value)


@pytest.mark.parametrize("value", ["\udbff\udc00", "\ud83d\ude80", "x\ud800\udc00y"])
def test_a_high_then_low_surrogate_pair_in_a_str_is_refused(tmp_path: Path, value: str) -> None:
    # Escaped, the two surrogates would read back as the one character they pair
    # into: not the value given. So it is refused, before a byte is written.
    path = tmp_path / "run.jsonl"
    with Session.create(path) as s:
        before = path.read_bytes()
        with pytest.raises(ValueError, match="surrogate"):
            s.append_message(Message.user(value))
        with pytest.raises(ValueError, match="surrogate"):
            s.append_message(Message.user("ok"), extra={value: 1})
        assert path.read_bytes() == before
        s.append_message(Message.user("\ude80\ud83d x \ude80"))  # low then high, or apart: each is lone, fine
    with Session.load(path) as s:
        assert s.messages[-1].content == "\ude80\ud83d x \ude80"


def test_canonical_json_depth_limit() -> None:
    assert canonical_json(nest(512)).count("[") == 512
    with pytest.raises(ValueError, match="at most 512 containers deep"):
        canonical_json(nest(513))


def test_the_nesting_limit_of_an_append_is_named(tmp_path: Path) -> None:
    # The error names the limits (512 in a line, 510 in a message's content),
    # not the symptom ("does not read back"); nothing is written.
    with Session.create(tmp_path / "run.jsonl") as s:
        for attempt in [lambda: s.append_message(Message.user(nest(MAX_IN_MESSAGE + 1))),
                        lambda: s.append_grants(nest(MAX_IN_MESSAGE + 1)),
                        lambda: s.append_messages([Message.user(nest(2000))])]:
            with pytest.raises(ValueError) as e:
                attempt()
            text = str(e.value)
            assert "512" in text and "510" in text and "read back" not in text, text
        s.append_message(Message.user(nest(MAX_IN_MESSAGE)))


def test_a_huge_string(tmp_path: Path) -> None:
    size = scale(5, 100) * 1_000_000
    unit = "a Ω 日本 🚀 \ud800 \n"
    text = (unit * (size // len(unit.encode("utf-8", "surrogatepass")) + 1))
    started = time.monotonic()
    path = tmp_path / "run.jsonl"
    with Session.create(path) as s:
        s.append_message(Message.user(text))
        tail = s.append_message(Message.user("after the big one"))
    with Session.load(path) as s:
        assert s.messages[0].content == text
        assert s.message_ids[-1] == tail
    figure("8. huge string", chars=len(text), file_bytes=path.stat().st_size,
           seconds=round(time.monotonic() - started, 1))


# -- hypothesis: whatever the writer accepts, the reader gives back ------------

def break_pairs(text: str) -> str:
    """Put a "." between a high surrogate and a low one right after it: that pair is
    the known bug tested above, kept out of here so this test looks for others."""
    out = []
    for i, c in enumerate(text):
        out.append(c)
        if "\ud800" <= c <= "\udbff" and i + 1 < len(text) and "\udc00" <= text[i + 1] <= "\udfff":
            out.append(".")
    return "".join(out)


texts = st.text(st.characters(codec=None, exclude_categories=()), max_size=40).map(break_pairs)
scalars = (st.none() | st.booleans() | texts
           | st.integers(min_value=-(10**4300 - 1), max_value=10**4300 - 1)
           | st.integers(min_value=-(2**70), max_value=2**70)
           | st.floats(allow_nan=False, allow_infinity=False))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=6)
                      | st.tuples(inner, inner)
                      | st.dictionaries(texts, inner, max_size=6), max_leaves=40)


class Shared:
    """One transcript for all of hypothesis's examples (fixtures do not mix with @given)."""

    folder = Path(tempfile.mkdtemp(prefix="at-values-"))
    path = folder / "run.jsonl"
    session: Session | None = None
    written: list[Any] = []


@settings(max_examples=scale(300, 6000), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(values)
def check_round_trip(value: Any) -> None:
    s = Shared.session
    assert s is not None
    try:
        canonical_json(value)
    except (ValueError, TypeError):
        with pytest.raises((ValueError, TypeError)):
            s.append_grants(value)
        return
    s.append_grants(value)
    assert same_json(s.grants, value)
    Shared.written.append(value)


def test_everything_the_writer_accepts_reads_back_equal() -> None:
    Shared.written = []
    Shared.session = Session.create(Shared.path)
    try:
        check_round_trip()
    finally:
        Shared.session.close()
    with Session.load(Shared.path) as s:
        got = [e.payload["grants"] for e in s.events[1:]]
    assert len(got) == len(Shared.written)
    assert all(same_json(a, b) for a, b in zip(got, Shared.written))
    figure("8. hypothesis round trip", values=len(Shared.written), long=LONG)
    shutil.rmtree(Shared.folder, ignore_errors=True)
