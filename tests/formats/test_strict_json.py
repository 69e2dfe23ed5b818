"""The importers' JSON reader against the standard library's, the oracle: the same
value for every JSON text, the same refusal for every other line."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_transcript.formats._source import strict_json

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=30,
)


def _refuse(name: str) -> None:
    raise ValueError(name)


def _stdlib(raw: bytes) -> object:
    return json.loads(raw, parse_constant=_refuse)


@given(json_values, st.booleans())
def test_every_json_text_reads_as_the_stdlib_reads_it(value: object, ascii: bool) -> None:
    raw = json.dumps(value, ensure_ascii=ascii).encode("utf-8", "surrogatepass")
    try:
        want = _stdlib(raw)
    except ValueError:  # a lone surrogate written raw: not UTF-8
        with pytest.raises(ValueError):
            strict_json(raw)
        return
    got = strict_json(raw)
    assert got == want and type(got) is type(want)


@given(st.binary(max_size=40))
def test_any_bytes_read_or_refused_as_the_stdlib_does(raw: bytes) -> None:
    try:
        want = _stdlib(raw)
    except ValueError as e:
        with pytest.raises(type(e)):
            strict_json(raw)
        return
    assert strict_json(raw) == want


@pytest.mark.parametrize("raw", [b'{"a": NaN}', b"[Infinity]", b"-Infinity", b'{"x":1', b"\xff{}"])
def test_what_json_cannot_hold_is_refused(raw: bytes) -> None:
    with pytest.raises(ValueError):
        strict_json(raw)
