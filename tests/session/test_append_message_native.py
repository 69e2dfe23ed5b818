"""append_message writes a Message's payload from its fields, in the core.

Without an ``extra``, ``Session.append_message`` hands the Message itself to
the native writer, which writes its payload without building
``message.to_dict()``. Under test: the line is byte for byte the one the dict
path writes (the payload is ``canonical_json(message.to_dict())``), and what
one path refuses the other refuses, with the same exception, before a byte is
written; a subclass with its own ``to_dict`` still goes through it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_transcript import Message, Session, canonical_json

json_leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text())
json_value = st.recursive(json_leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.tuples(inner, inner),
    st.dictionaries(st.text(max_size=5), inner, max_size=4)), max_leaves=12)
flag = st.one_of(st.booleans(), st.sampled_from([0, 1, "", "x", [], [0], None]))

messages = st.builds(
    Message,
    role=st.one_of(st.sampled_from(["user", "assistant", "tool", "system", "developer"]), st.text(),
                   st.integers()),
    content=json_value,
    name=st.one_of(st.none(), st.text(max_size=8)),
    tool_calls=st.one_of(st.none(), st.lists(json_value, max_size=2)),
    tool_call_id=st.one_of(st.none(), st.text(max_size=8)),
    sticky=flag,
    sysprompt=flag,
    depth=st.one_of(st.none(), st.integers(-2, 5), json_value),
)


def _payload_of(line: bytes) -> bytes:
    start = line.index(b',"payload":') + len(b',"payload":')
    return line[start:line.rindex(b',"ts":')]


def _last_line(path: Path) -> bytes:
    return path.read_bytes().splitlines()[-1]


def _outcome(s: Session, path: Path, m: Message, extra: dict[str, Any] | None) -> Any:
    size = path.stat().st_size
    try:
        s.append_message(m, extra)
    except (TypeError, ValueError) as e:
        assert path.stat().st_size == size, "a refused message wrote bytes"
        return type(e)
    return _payload_of(_last_line(path))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(m=messages)
def test_the_native_payload_is_the_dicts(tmp_path_factory: pytest.TempPathFactory, m: Message) -> None:
    folder = tmp_path_factory.mktemp("native")
    with Session.create(folder / "native.jsonl") as native, Session.create(folder / "dict.jsonl") as by_dict:
        got = _outcome(native, folder / "native.jsonl", m, None)
        want = _outcome(by_dict, folder / "dict.jsonl", m, {})  # an extra: the dict path
        assert got == want
        if isinstance(want, bytes):
            assert want.decode() == canonical_json(m.to_dict())
            assert native.messages == by_dict.messages


def test_nesting_at_the_limit_reads_back_and_one_deeper_is_refused(tmp_path: Path) -> None:
    def nested(depth: int) -> Any:
        value: Any = 0
        for _ in range(depth):
            value = [value]
        return value

    with Session.create(tmp_path / "t.jsonl") as s:
        size = (tmp_path / "t.jsonl").stat().st_size
        for depth in (511, 520):
            with pytest.raises(ValueError):
                s.append_message(Message.user(nested(depth)))
            with pytest.raises(ValueError):
                s.append_message(Message.user(nested(depth)), {})  # an extra: the dict path
            assert (tmp_path / "t.jsonl").stat().st_size == size
        s.append_message(Message.user(nested(510)))
    with Session.load(tmp_path / "t.jsonl") as again:
        assert again.messages[-1].content == nested(510)


def test_a_subclass_and_an_extra_take_the_dict_path(tmp_path: Path) -> None:
    class Loud(Message):
        def to_dict(self) -> dict[str, Any]:
            d = super().to_dict()
            d["content"] = str(d["content"]).upper()
            return d

    with Session.create(tmp_path / "t.jsonl") as s:
        s.append_message(Loud(role="user", content="hi"))
        s.append_message(Message.user("hi"), {"finish-reason": "stop", "role": "x"})
        s.append_message(Message(role="user", content=math.pi, sticky=True, depth=0))
    got = [json.loads(x)["payload"] for x in (tmp_path / "t.jsonl").read_bytes().splitlines()[1:]]
    assert got == [{"content": "HI", "role": "user"},
                   {"content": "hi", "finish-reason": "stop", "role": "user"},
                   {"content": math.pi, "depth": 0, "role": "user", "sticky": True}]
