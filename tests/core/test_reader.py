"""The JSON reader (agent_transcript._core.loads) against the stdlib oracle, json.loads."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_transcript import _core

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**60), max_value=10**60)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5),
    max_leaves=30,
)


def same(a: object, b: object) -> bool:
    """Equal, with floats compared by value and sign (so -0.0 != 0.0) and types kept."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        assert isinstance(b, float)
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    if isinstance(a, list):
        assert isinstance(b, list)
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        assert isinstance(b, dict)
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return a == b


@settings(max_examples=300)
@given(values, st.sampled_from([None, 0, 2]), st.booleans())
def test_reads_what_json_dumps_writes_as_json_loads_does(value: object, indent: int | None, ascii_only: bool) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    assert same(_core.loads(text.encode()), json.loads(text))


@given(st.dictionaries(st.text(max_size=3), st.integers(), min_size=1, max_size=6), st.randoms())
def test_any_key_order_and_the_last_duplicate_wins(d: dict[str, int], rnd: object) -> None:
    items = list(d.items()) + [(k, v + 1) for k, v in d.items()]
    text = "{" + ", ".join(f"{json.dumps(k)} : {v}" for k, v in items) + "}"
    assert _core.loads(text.encode()) == json.loads(text) == {k: v + 1 for k, v in d.items()}


@pytest.mark.parametrize(
    "text",
    [
        '"\\ud800"',
        '"\\udfff x \\ud83d\\ude80"',
        '"\\ud83d\\ud83d\\ude80"',
        '"\\u0000\\u001f\\/\\b\\f\\n\\r\\t"',
        " \t\r\n [ 1 , -0 , -0.0 , 1e-7 , 1E+2 , 5e-324 , 1.7976931348623157e308 ] \n",
        str(10**4000),
        "-" + str(10**4299),
        "0.1000000000000000055511151231257827021181583404541015625",
        "2.2250738585072011e-308",
    ],
)
def test_edge_values_match_json_loads(text: str) -> None:
    assert same(_core.loads(text.encode()), json.loads(text))


@pytest.mark.parametrize(
    "text",
    ["NaN", "-Infinity", "Infinity", "[NaN]", "1e400", "-1e400", "", "[1,]", "{'a':1}", "01", "[1] x", '"a\tb"', "\ufeff1"],
)
def test_refuses_what_is_not_json_or_not_writable(text: str) -> None:
    with pytest.raises(ValueError):
        _core.loads(text.encode())


def test_an_int_over_pythons_digit_limit_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        _core.loads(str(10**4300).encode())


def test_truncations_at_every_byte_of_a_sample_line_raise_and_never_crash() -> None:
    line = json.dumps(
        {"id": "x", "payload": {"content": "naïve 日本 🚀 \\ \" \u0001", "n": [1, 2.5, None, True]}, "v": 1},
        ensure_ascii=False,
    ).encode()
    assert _core.loads(line)["payload"]["n"] == [1, 2.5, None, True]
    for cut in range(len(line)):
        with pytest.raises(ValueError):
            _core.loads(line[:cut])


@pytest.mark.parametrize("bad", [b'"\xff"', b'"\xc3"', b'"\xed\xa0\x80"', b'"\xf0\x9f\x9a"', b'["\xe6\x97"]'])
def test_invalid_utf8_is_refused(bad: bytes) -> None:
    with pytest.raises(ValueError):
        _core.loads(bad)


def test_nesting_is_limited_to_512_and_100000_brackets_fail_cleanly() -> None:
    assert _core.loads(b"[" * 512 + b"]" * 512) is not None
    with pytest.raises(ValueError):
        _core.loads(b"[" * 513 + b"]" * 513)
    with pytest.raises(ValueError):
        _core.loads(b"[" * 100_000)
    with pytest.raises(ValueError):
        _core.loads(b'{"a":' * 100_000)


@given(st.binary(max_size=64))
def test_arbitrary_bytes_either_agree_with_json_loads_or_raise(data: bytes) -> None:
    try:
        expected = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        with pytest.raises(ValueError):
            _core.loads(data)
        return
    if isinstance(expected, float) and math.isinf(expected):
        with pytest.raises(ValueError):
            _core.loads(data)
        return
    assert same(_core.loads(data), expected)


@pytest.mark.parametrize("text", ['"\ud800"', '["a\udfffb", {"\udc00": "\ud83d"}]', '"\udc00\ud800"'])
def test_a_str_holding_lone_surrogates_reads_as_json_loads_reads_it(text: str) -> None:
    assert _core.loads(text) == json.loads(text)


def test_a_str_holding_a_high_then_a_low_surrogate_reads_as_their_pair() -> None:
    # The one difference from json.loads, which keeps them two code points: the
    # same as canonical_json's round trip (it escapes each, and "\ud83d\ude00"
    # is the pair), so an id or value reads back as it was written.
    assert _core.loads('"\ud83d\ude00"') == "\U0001f600"


@pytest.mark.parametrize("text", ['\ud800', '["\\\ud800"]', '[1] \udc00'])
def test_a_lone_surrogate_where_json_loads_refuses_one_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        json.loads(text)
    with pytest.raises(ValueError):
        _core.loads(text)


def whole_by_tail_check(tmp: Path, text: bytes) -> bool:
    """The reader's skip of one value (what the tail check asks of a last line)."""
    path = tmp / "t.jsonl"
    path.write_bytes(b'{"id":"a"}\n' + text)
    fd = os.open(path, os.O_RDONLY)
    try:
        return _core.tail_check(fd)[0] == "whole"
    finally:
        os.close(fd)


def decodes(text: bytes) -> bool:
    try:
        _core.loads(text)
    except ValueError:
        return False
    return True


STRING_PARTS = [b"a", b"\\n", b'\\"', b"\\\\", b"\\u00e9", b"\\ud800", b"\\x", b"\\u12", b"\t", b"\x01", b'"',
                "é".encode(), "🚀".encode(), b"\\", b"plain text "]


@settings(max_examples=300)
@given(st.lists(st.sampled_from(STRING_PARTS), max_size=40))
def test_skipping_a_string_agrees_with_decoding_it(tmp_path_factory: pytest.TempPathFactory, parts: list[bytes]) -> None:
    text = b'"' + b"".join(parts) + b'"'
    assert whole_by_tail_check(tmp_path_factory.mktemp("s"), text) == decodes(text)


def test_every_stop_byte_is_found_at_every_position_of_a_block(tmp_path: Path) -> None:
    for length in range(48):
        for at in range(length):
            control = b'"' + b"a" * at + b"\x01" + b"a" * (length - at - 1) + b'"'
            assert not whole_by_tail_check(tmp_path, control) and not decodes(control), (at, length)
            escape = b'"' + b"a" * at + b"\\n" + b"a" * (length - at - 1) + b'"'
            assert _core.loads(escape) == "a" * at + "\n" + "a" * (length - at - 1)
            assert whole_by_tail_check(tmp_path, escape)
            quote = b'["' + b"a" * at + b'","' + b"a" * (length - at - 1) + b'"]'
            assert _core.loads(quote) == ["a" * at, "a" * (length - at - 1)]
