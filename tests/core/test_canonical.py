"""canonical_json against its oracle, the standard library's json.dumps.

canonical_json(v) must equal json.dumps(v, sort_keys=True, separators=(",", ":"),
ensure_ascii=False) for every value that call accepts, except: NaN and the
infinities raise ValueError, a non-str dict key raises TypeError, and a lone
surrogate is written as a lowercase \\udxxx escape.
"""

from __future__ import annotations

import collections
import datetime
import decimal
import enum
import fractions
import json
import math
import os
import random
import re
import struct
import sys
import tempfile
import threading
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from agent_transcript import canonical_json
from agent_transcript._core import Transcript


def oracle(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


SURROGATE = re.compile("[\ud800-\udfff]")


def oracle_with_escaped_surrogates(value: Any) -> str:
    """The oracle's text with each (raw) lone surrogate written as \\udxxx."""
    return SURROGATE.sub(lambda m: "\\u%04x" % ord(m.group()), oracle(value))


def has_surrogate_pair(text: str) -> bool:
    """A high surrogate right before a low one: JSON reads their escapes as one character."""
    return re.search("[\ud800-\udbff][\udc00-\udfff]", text) is not None


# Per test, not a global profile: other test modules keep their own settings.
examples = settings(deadline=None, max_examples=200)

# Floats json can write: every finite float, and the edges named in the contract.
EDGE_FLOATS = [
    0.0, -0.0, 1.0, -1.0, 0.1, 0.5, 100.0, 1e-7, 1.5e-7, 1e-5, 1e-4, 0.0001, 9.999e-5,
    1e15, 1e16, 1e17, 1e22, 1234567890123456.0, 12345678901234567.0, 9007199254740993.0,
    5e-324, -5e-324, 2.2250738585072014e-308, 2.225073858507201e-308,
    sys.float_info.max, -sys.float_info.max, sys.float_info.min, sys.float_info.epsilon,
    1 / 3, 2 / 3, math.pi, math.e, 123456.789, -840847321408031.25,
]

floats = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(EDGE_FLOATS)
ints = st.integers() | st.integers(min_value=-(10**300), max_value=10**300)
scalars = st.none() | st.booleans() | ints | floats | st.text()
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=6)
    | st.lists(children, max_size=6).map(tuple)
    | st.dictionaries(st.text(), children, max_size=6),
    max_leaves=40,
)


# --- agreement with the oracle -------------------------------------------------------


@examples
@given(json_values)
def test_any_json_value_matches_json_dumps(value: Any) -> None:
    assert canonical_json(value) == oracle(value)


@examples
@given(st.text())
def test_any_string_matches_json_dumps(text: str) -> None:
    assert canonical_json(text) == oracle(text)
    assert canonical_json({text: text}) == oracle({text: text})


@examples
@given(st.dictionaries(st.text(), st.integers(), max_size=20))
def test_keys_are_in_code_point_order(value: dict[str, int]) -> None:
    text = canonical_json(value)
    assert text == oracle(value)
    assert list(json.loads(text)) == sorted(value)


def test_key_order_is_code_point_order_not_utf16_order() -> None:
    # In UTF-16, U+10000 (a surrogate pair, 0xD800…) sorts before U+FFFF.
    value = {"\U00010000": 1, "\uffff": 2, "\ue000": 3, "\ud7ff": 4, "z": 5, "Z": 6, "": 7}
    assert canonical_json(value) == oracle(value)
    assert canonical_json(value) == '{"":7,"Z":6,"z":5,"\ud7ff":4,"\ue000":3,"\uffff":2,"\U00010000":1}'


@pytest.mark.parametrize("value", EDGE_FLOATS, ids=repr)
def test_edge_floats_are_written_as_repr(value: float) -> None:
    assert canonical_json(value) == oracle(value) == repr(value)
    assert canonical_json([value, -value]) == oracle([value, -value])


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1e-05, "1e-05"), (0.0001, "0.0001"), (1e16, "1e+16"), (1234567890123456.0, "1234567890123456.0"),
        (1.5e-07, "1.5e-07"), (-0.0, "-0.0"), (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"), (100.0, "100.0"), (1e22, "1e+22"),
    ],
)
def test_float_text_in_both_notations(value: float, text: str) -> None:
    assert canonical_json(value) == text


def test_floats_from_random_bit_patterns_match_repr() -> None:
    rng = random.Random(20260809)
    values: list[float] = []
    while len(values) < 200_000:
        (value,) = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))
        if math.isfinite(value):
            values.append(value)
    # Subnormals and values around the notation switch, too.
    values += [struct.unpack("<d", n.to_bytes(8, "little"))[0] for n in range(1, 2000)]
    values += [float(f"{m}e{e}") for e in range(-330, 310) for m in ("1", "1.5", "9.999999999999998")]
    values = [v for v in values if math.isfinite(v)]
    assert canonical_json(values) == oracle(values)


@examples
@given(st.integers(min_value=-(10**4299), max_value=10**4299))
def test_ints_of_any_size_match(value: int) -> None:
    assert canonical_json(value) == oracle(value) == str(value)


def test_int_limits_of_64_bits() -> None:
    values = [0, -1, 2**63 - 1, -(2**63), 2**63, -(2**63) - 1, 2**64 - 1, 2**64, -(2**64), 10**19]
    assert canonical_json(values) == oracle(values)


def test_int_of_4300_digits_is_written_4301_refused() -> None:
    assert canonical_json(10**4299) == "1" + "0" * 4299
    assert canonical_json(-(10**4299)) == "-1" + "0" * 4299
    with pytest.raises(ValueError):
        canonical_json(10**4300)
    with pytest.raises(ValueError):
        canonical_json({"n": [-(10**4300)]})


def test_control_characters_and_escapes() -> None:
    text = "".join(chr(c) for c in range(0x20)) + '"\\/\x7f\u2028\u2029é日本🚀'
    assert canonical_json(text) == oracle(text)
    assert canonical_json(text).startswith('"\\u0000\\u0001')
    assert "\\u001f" in canonical_json(text) and "\\u001F" not in canonical_json(text)
    assert canonical_json("\b\f\n\r\t") == '"\\b\\f\\n\\r\\t"'
    # U+D55C and U+D7FF begin with 0xED as a surrogate does, but are not one.
    assert canonical_json("한\ud7ff") == '"한\ud7ff"'


def test_tuples_are_lists() -> None:
    value: Any = (1, (2, ("a",)), [(), {}])
    assert canonical_json(value) == oracle(value) == '[1,[2,["a"]],[[],{}]]'


def test_empty_containers_and_singletons() -> None:
    values: list[Any] = [[], {}, (), "", None, True, False, 0, {"": ""}, [[]], [{}]]
    for value in values:
        assert canonical_json(value) == oracle(value)


# --- lone surrogates -----------------------------------------------------------------

surrogates = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
text_with_surrogates = st.lists(surrogates | st.characters(), min_size=1).map("".join)


@examples
@given(text_with_surrogates)
def test_lone_surrogates_are_escaped_and_read_back(text: str) -> None:
    value = {text: [text, {"k": text}]}
    ours = canonical_json(value)
    assert ours == oracle_with_escaped_surrogates(value)
    ours.encode("utf-8")  # valid UTF-8: no raw surrogate left
    assume(not has_surrogate_pair(text))
    assert json.loads(ours) == value


def test_each_lone_surrogate_escape_is_lowercase() -> None:
    assert canonical_json("\ud800") == '"\\ud800"'
    assert canonical_json("a\udfffb\udabc") == '"a\\udfffb\\udabc"'
    assert canonical_json({"\udc00": "\ud7ff"}) == '{"\\udc00":"\ud7ff"}'
    for code in (0xD800, 0xDBFF, 0xDC00, 0xDFFF, 0xDABC):
        assert json.loads(canonical_json(chr(code))) == chr(code)


def test_surrogate_keys_sort_by_code_point() -> None:
    value = {"\ue000": 1, "\udc00": 2, "\ud7ff": 3, "\U00010000": 4, "\ud800x": 5}
    text = canonical_json(value)
    assert text == oracle_with_escaped_surrogates(value)
    assert list(json.loads(text)) == sorted(value)


def test_a_high_and_low_surrogate_side_by_side_read_back_as_one_character() -> None:
    # Two code points in Python, but JSON reads the escape pair as one: the
    # standard library's own ensure_ascii output behaves the same way.
    assert canonical_json("\ud83d\ude00") == '"\\ud83d\\ude00"'
    assert json.loads(canonical_json("\ud83d\ude00")) == "\U0001f600"
    assert json.loads(json.dumps("\ud83d\ude00")) == "\U0001f600"


# --- the three refusals --------------------------------------------------------------


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, -math.nan])
@pytest.mark.parametrize("wrap", [lambda v: v, lambda v: [1, v], lambda v: {"a": {"b": (v,)}}])
def test_nan_and_infinities_are_refused(bad: float, wrap: Any) -> None:
    # json's own message, then the value as Python's repr writes it.
    with pytest.raises(ValueError, match=f"not JSON compliant: {re.escape(repr(bad))}$"):
        canonical_json(wrap(bad))


@pytest.mark.parametrize("key", [1, 1.5, True, False, None, (1, 2), b"k"])
def test_non_str_keys_are_refused(key: Any) -> None:
    with pytest.raises(TypeError, match="keys must be str"):
        canonical_json({key: 1})
    with pytest.raises(TypeError):
        canonical_json([{"a": {key: "v"}}])


def test_non_str_key_among_str_keys_is_refused() -> None:
    with pytest.raises(TypeError):
        canonical_json({"a": 1, 2: "b"})


@pytest.mark.parametrize(
    "bad",
    [
        b"bytes", bytearray(b"x"), {1, 2}, frozenset(), object(), decimal.Decimal("1.5"),
        fractions.Fraction(1, 3), complex(1, 2), datetime.date(2026, 8, 9), memoryview(b""),
        range(3), iter([1]), type, print,
    ],
    ids=lambda v: type(v).__name__,
)
def test_non_json_types_are_refused_naming_the_type(bad: Any) -> None:
    with pytest.raises(TypeError, match=re.escape(type(bad).__name__)):
        canonical_json(bad)
    with pytest.raises(TypeError, match=re.escape(type(bad).__name__)):
        canonical_json({"a": [1, {"b": bad}]})


# --- nesting -------------------------------------------------------------------------


def nested_lists(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


def nested_mixed(depth: int) -> Any:
    value: Any = {}
    for level in range(depth - 1):
        value = {"k": value} if level % 3 == 0 else ([value] if level % 3 == 1 else (value,))
    return value


@pytest.mark.parametrize("build", [nested_lists, nested_mixed])
def test_512_nested_containers_are_written_513_refused(build: Any) -> None:
    assert canonical_json(build(512)) == oracle(build(512))
    with pytest.raises(ValueError, match="512"):
        canonical_json(build(513))
    with pytest.raises(ValueError):
        canonical_json(build(100_000))


def test_depth_counts_containers_not_scalars() -> None:
    value = nested_lists(511)
    inner: Any = value
    for _ in range(510):
        inner = inner[0]
    inner.append("a scalar at the deepest level")
    assert canonical_json(value) == oracle(value)


def test_self_referencing_list_and_dict_are_refused() -> None:
    cyclic: list[Any] = [1]
    cyclic.append(cyclic)
    with pytest.raises(ValueError):
        canonical_json(cyclic)
    looped: dict[str, Any] = {}
    looped["self"] = [looped]
    with pytest.raises(ValueError):
        canonical_json(looped)


def test_deep_nesting_needs_no_deep_stack(small_stack: int) -> None:
    # A Python thread's stack may be small; 512 levels must not overflow it.
    # (The oracle runs out here: the stdlib's own encoder would overflow 64 KiB.)
    # small_stack is 64 KiB, or the platform's minimum where that is more (aarch64).
    expected = [oracle(build(512)) for build in (nested_lists, nested_mixed)]
    results: list[Any] = []

    def work() -> None:
        for build in (nested_lists, nested_mixed):
            results.append(canonical_json(build(512)))
            try:
                canonical_json(build(513))
            except ValueError:
                results.append("refused")

    previous = threading.stack_size(small_stack)
    try:
        thread = threading.Thread(target=work)
        thread.start()
        thread.join()
    finally:
        threading.stack_size(previous)
    assert results == [expected[0], "refused", expected[1], "refused"]


# --- subclasses, as json.dumps treats them -------------------------------------------


class Color(enum.IntEnum):
    RED = 1
    BIG = 2**80


class Perm(enum.IntFlag):
    R = 4
    W = 2


class Name(str, enum.Enum):
    ALICE = "alice"


class Ratio(float, enum.Enum):
    HALF = 0.5


class LoudInt(int):
    def __repr__(self) -> str:
        return "loud"

    __str__ = __repr__


class LoudFloat(float):
    def __repr__(self) -> str:
        return "loud"

    __str__ = __repr__


class LoudStr(str):
    def __repr__(self) -> str:
        return "loud"

    __str__ = __repr__


class Seq(list):  # type: ignore[type-arg]
    pass


class Pair(tuple):  # type: ignore[type-arg]
    pass


class Backwards(list):  # type: ignore[type-arg]
    def __iter__(self) -> Any:
        return reversed(list(super().__iter__()))


class Mapping(dict):  # type: ignore[type-arg]
    pass


class RenamedItems(dict):  # type: ignore[type-arg]
    def items(self) -> Any:
        return [(k.upper(), v) for k, v in dict.items(self)]


@pytest.mark.parametrize(
    "value",
    [
        True, False, [True, 1, 1.0, False, 0],
        Color.RED, Color.BIG, [Color.RED, {"c": Color.BIG}], Perm.R | Perm.W,
        Name.ALICE, {Name.ALICE: Name.ALICE}, Ratio.HALF,
        LoudInt(7), LoudInt(-(2**70)), LoudFloat(2.5), LoudFloat(1e-7), LoudStr("quiet"),
        {LoudStr("b"): 1, "a": LoudStr("x\n")},
        Seq([1, Seq([2])]), Seq(), Pair((1, 2)), Pair(), Backwards([1, 2, 3]),
        Mapping(b=1, a=Mapping()), Mapping(), RenamedItems(b=1, a=2),
        collections.OrderedDict([("b", 1), ("a", 2)]), collections.defaultdict(list, {"z": [1]}),
        collections.Counter("hello"),
    ],
    ids=repr,
)
def test_subclasses_are_written_as_json_dumps_writes_them(value: Any) -> None:
    assert canonical_json(value) == oracle(value)


def test_int_and_float_subclasses_print_their_value() -> None:
    assert canonical_json([LoudInt(7), LoudFloat(2.5), Color.RED, Perm.R]) == "[7,2.5,1,4]"
    assert canonical_json(True) == "true" and canonical_json(False) == "false"


def test_nan_float_subclass_is_refused() -> None:
    with pytest.raises(ValueError):
        canonical_json(LoudFloat("nan"))


def test_dict_subclass_items_must_be_pairs() -> None:
    class Broken(dict):  # type: ignore[type-arg]
        def items(self) -> Any:
            return [("a", 1, 2)]

    with pytest.raises(ValueError):
        canonical_json(Broken(a=1))


def test_dict_subclass_items_may_call_canonical_json_again() -> None:
    class Reentrant(dict):  # type: ignore[type-arg]
        def items(self) -> Any:
            return [(k, canonical_json(v)) for k, v in dict.items(self)]

    value = {"outer": Reentrant(x=[1, "é"], y={"b": 2, "a": 1})}
    assert canonical_json(value) == oracle(value)
    assert json.loads(json.loads(canonical_json(value))["outer"]["y"]) == {"a": 1, "b": 2}


def test_containers_changed_while_written_do_not_crash() -> None:
    outer: list[Any] = []

    class Shrinker(list):  # type: ignore[type-arg]
        def __iter__(self) -> Any:
            outer.clear()
            return iter([1])

    # The list is read anew after each item, as json does: what was cleared
    # is not written. (`keep` holds the Shrinker for the oracle's sake: the
    # C encoder only borrows the items of the list it walks.)
    keep = Shrinker()
    outer[:] = [0, keep, "gone", {"gone": 1}]
    expected = oracle(outer)
    outer[:] = [0, keep, "gone", {"gone": 1}]
    assert canonical_json(outer) == expected == "[0,[1]]"
    # With no other reference to the item being walked: no crash either.
    outer[:] = [0, Shrinker(), "gone", {"gone": 1}]
    assert canonical_json(outer) == "[0,[1]]"

    mapping: dict[str, Any] = {}

    class Clearer(list):  # type: ignore[type-arg]
        def __iter__(self) -> Any:
            mapping.clear()
            return iter(["cleared"])

    # A dict's items are taken before any is written, as json does.
    mapping.update(a=Clearer(), b="still written", c=[1.5])
    expected = oracle(mapping)
    mapping.update(a=Clearer(), b="still written", c=[1.5])
    assert canonical_json(mapping) == expected
    assert json.loads(expected) == {"a": ["cleared"], "b": "still written", "c": [1.5]}


# --- an appended envelope's line ------------------------------------------------------

# Types whose payloads replay checks: the generated ones must not be one of them.
CHECKED_TYPES = {"session-meta", "message", "compaction", "rewind", "elision", "grants",
                 "tool-dispatched", "tool-settled", "run-context"}


def appended(id: str, payload: Any, type: str) -> tuple[bytes, str]:
    """The line ``Transcript.append`` writes for one envelope after a session-meta
    (the writer's own serialisation, ``write_envelope``), and its timestamp."""
    with tempfile.TemporaryDirectory() as folder:
        fd = os.open(os.path.join(folder, "t.jsonl"), os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            t = Transcript.new(fd, False)
            t.append("session-meta", {}, None)
            t.append(type, payload, id)
            line = os.pread(fd, 1 << 24, 0).split(b"\n", 1)[1]
            t.close_writer(os.path.join(folder, "t.jsonl"))
        finally:
            os.close(fd)
    return line, json.loads(line)["ts"]


def test_an_appended_line_has_the_exact_bytes() -> None:
    payload = {"role": "user", "content": "héllo \"there\"\n🚀", "sticky": True, "n": [1, 2.5, None]}
    line, ts = appended("0190f1c2a3b4c5d6e7f8091a2b3c4d5e", payload, "note")
    expected = (
        '{"id":"0190f1c2a3b4c5d6e7f8091a2b3c4d5e","payload":'
        + oracle(payload)
        + ',"ts":"' + ts + '","type":"note","v":1}\n'
    )
    assert line == expected.encode("utf-8")
    assert line.endswith(b"\n") and line.count(b"\n") == 1


@examples
@given(st.text(min_size=1), json_values, st.text())
def test_an_appended_line_is_the_canonical_envelope(id: str, payload: Any, type: str) -> None:
    assume(type not in CHECKED_TYPES)
    line, ts = appended(id, payload, type)
    envelope = {"id": id, "payload": payload, "ts": ts, "type": type, "v": 1}
    assert line == (oracle(envelope) + "\n").encode("utf-8")
    assert line.endswith(b"\n") and b"\n" not in line[:-1]
    parsed = json.loads(line)
    assert list(parsed) == ["id", "payload", "ts", "type", "v"]
    assert parsed == json.loads(oracle(envelope))


def test_an_appended_line_escapes_its_strings_and_surrogates() -> None:
    line, ts = appended('a"b', {"t": "\ud800"}, "x\\y")
    assert line == b'{"id":"a\\"b","payload":{"t":"\\ud800"},"ts":"' + ts.encode() + b'","type":"x\\\\y","v":1}\n'
    assert json.loads(line) == {"id": 'a"b', "payload": {"t": "\ud800"}, "ts": ts, "type": "x\\y", "v": 1}


def test_append_refuses_what_canonical_json_refuses() -> None:
    with pytest.raises(ValueError):
        appended("id", {"x": math.nan}, "note")
    with pytest.raises(TypeError):
        appended("id", {1: "x"}, "note")
    # A line nests 512 containers deep at most and the envelope's object is one
    # of them: 511 in the payload are fine, 512 are refused, naming the limit
    # (written, they would not read back).
    with pytest.raises(ValueError, match="512 containers deep"):
        appended("id", nested_lists(512), "note")
    assert appended("id", nested_lists(511), "t")[0].startswith(b'{"id":"id","payload":[[[')


@pytest.mark.parametrize("args", [(1, {}, "t"), ("id", {}, b"t")])
def test_append_wants_str_id_and_type(args: tuple[Any, ...]) -> None:
    with pytest.raises(TypeError):
        appended(*args)


def test_large_payload_round_trips() -> None:
    payload = {"items": [{"text": "日本語 données 🚀 " * 50, "n": i, "f": i / 7} for i in range(2000)]}
    text = canonical_json(payload)
    assert len(text) > 1_000_000
    assert text == oracle(payload)
    line, ts = appended("i", payload, "x")
    assert line == ('{"id":"i","payload":' + text + ',"ts":"' + ts + '","type":"x","v":1}\n').encode()
