"""digest(data) is "sha256:" + the hexdigest of the bytes, a str UTF-8 encoded first."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_transcript import canonical_json, digest

# Per test, not a global profile: other test modules keep their own settings.
examples = settings(deadline=None, max_examples=200)


def sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@examples
@given(st.binary(max_size=5000))
def test_bytes_digest_matches_hashlib(data: bytes) -> None:
    assert digest(data) == sha256(data)


@examples
@given(st.text(max_size=2000))
def test_str_digest_is_the_digest_of_its_utf8(text: str) -> None:
    assert digest(text) == sha256(text.encode("utf-8"))
    assert digest(text) == digest(text.encode("utf-8"))


def test_known_digests() -> None:
    assert digest(b"") == "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert digest("abc") == "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert digest("日本語 🚀") == sha256("日本語 🚀".encode())


def test_digest_shape() -> None:
    value = digest("x" * 1_000_000)
    assert value.startswith("sha256:") and len(value) == 7 + 64
    assert value[7:] == value[7:].lower() and int(value[7:], 16) >= 0


def test_digest_of_canonical_json_is_stable_across_key_order() -> None:
    a = {"b": [1, 2.5], "a": {"y": None, "x": "é"}}
    b = {"a": {"x": "é", "y": None}, "b": [1, 2.5]}
    assert digest(canonical_json(a)) == digest(canonical_json(b))
    assert digest(canonical_json(a)) != digest(canonical_json({**a, "c": 0}))


@pytest.mark.parametrize("bad", [1, 1.5, None, ["a"], {"a": 1}, object()], ids=lambda v: type(v).__name__)
def test_other_types_are_refused(bad: Any) -> None:
    with pytest.raises(TypeError, match=type(bad).__name__):
        digest(bad)


def test_str_with_a_lone_surrogate_is_refused_as_encode_would() -> None:
    with pytest.raises(UnicodeEncodeError):
        "\ud800".encode("utf-8")
    with pytest.raises(UnicodeEncodeError):
        digest("a\ud800")
