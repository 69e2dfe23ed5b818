"""Session.append_messages: many message lines with one write(2), all or nothing.

The guarantees under test:

* every item is checked before a byte is written: a refused item leaves the
  file and the session as they were;
* a failed write (a short write then an error) is cut back as append's is;
* the session then equals one that appended each message in order, and so
  does a reload (a property test);
* a crash inside the one write(2) leaves some prefix of the batch's bytes:
  load's tail repair keeps the whole lines of it, so a crash at any byte
  gives none of the batch or a prefix of it, each message whole.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_transcript import Message, Session, SessionClosed

from ._helpers import lines, meta, msg, python, state, write


def batch() -> list[Any]:
    return [
        Message.user("question"),
        (Message.assistant("answer", tool_calls=[{"id": "c1", "type": "function",
                                                  "function": {"name": "grep", "arguments": "{}"}}]),
         {"finish-reason": "tool_calls"}),
        Message.tool("c1", "result 日本語 🚀"),
        (Message.assistant("done"), None),
    ]


def test_one_call_writes_every_line_and_returns_their_ids(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with Session.create(path) as s:
        before = path.read_bytes()
        ids = s.append_messages(batch())
        assert len(ids) == 4 and len(set(ids)) == 4
        assert s.message_ids == ids
        assert [m.role for m in s.messages] == ["user", "assistant", "tool", "assistant"]
        assert s.events[2].payload == {"finish-reason": "tool_calls", **batch()[1][0].to_dict()}
        assert s.entries[1].extra == {"finish-reason": "tool_calls"}
        assert [e.line for e in s.entries] == [2, 3, 4, 5]
        after = s.append_message(Message.user("next"))
    data = path.read_bytes()
    assert data.startswith(before)
    written = [json.loads(x) for x in lines(path)[1:]]
    assert [w["id"] for w in written] == ids + [after]
    assert all(w["type"] == "message" for w in written)
    with Session.load(path) as t:
        assert t.message_ids == ids + [after]
        assert t.warnings == []


def test_an_empty_batch_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with Session.create(path) as s:
        was = state(path)
        assert s.append_messages([]) == []
        assert s.append_messages(iter(())) == []
        assert state(path) == was


@pytest.mark.parametrize("bad", [
    [Message.user("ok"), "not a message"],
    [Message.user("ok"), (Message.user("x"), "extra not a dict")],
    [Message.user("ok"), (Message.user("x"), {"cannot": {1, 2}})],      # not JSON
    [Message.user("ok"), (Message.user("x"), {"nan": float("nan")})],   # refused value
    [Message.user("ok"), (Message.user("x"),)],
])
def test_a_refused_item_anywhere_writes_nothing(tmp_path: Path, bad: list[Any]) -> None:
    path = tmp_path / "t.jsonl"
    with Session.create(path) as s:
        s.append_message(Message.user("first"))
        was, ids = state(path), s.message_ids
        with pytest.raises((TypeError, ValueError)):
            s.append_messages(bad)
        assert state(path) == was
        assert s.message_ids == ids
        s.append_messages([Message.user("still fine")])
    with Session.load(path) as t:
        assert [m.content for m in t.messages] == ["first", "still fine"]


@pytest.mark.parametrize("bad", [Message.user("x"), "text", {"role": "user"}])
def test_a_single_message_is_not_taken_for_a_batch(tmp_path: Path, bad: Any) -> None:
    with Session.create(tmp_path / "t.jsonl") as s:
        with pytest.raises(TypeError):
            s.append_messages(bad)


def test_a_closed_session_refuses(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    s = Session.create(path)
    s.close()
    was = state(path)
    with pytest.raises(SessionClosed):
        s.append_messages([Message.user("x")])
    assert state(path) == was


def test_a_last_line_without_its_newline_gets_one_first(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    write(path, meta(), msg("m1").rstrip(b"\n"))
    with Session.load(path) as s:
        ids = s.append_messages([Message.user("a"), Message.user("b")])
    assert [json.loads(x)["id"] for x in lines(path)] == ["meta", "m1", *ids]
    assert path.read_bytes().count(b"\n") == 4


def test_a_crash_at_every_byte_of_the_write_leaves_none_or_a_whole_prefix(fast_tmp: Path) -> None:
    path = fast_tmp / "t.jsonl"
    with Session.create(path) as s:
        s.append_message(Message.system("sys"))
        cut = path.stat().st_size
        ids = s.append_messages(batch())
    data = path.read_bytes()
    head, written = data[:cut], data[cut:]
    assert written.count(b"\n") == len(ids)
    ends = [i + 1 for i, b in enumerate(written) if b == ord("\n")]
    want_messages = [m.to_dict() if isinstance(m, Message) else m[0].to_dict() for m in batch()]
    for at in range(len(written) + 1):
        path.write_bytes(head + written[:at])      # what a crash after `at` bytes leaves
        # A line is kept once its last byte before the \n is there: a whole
        # last line that lacks its \n is a line (the next append adds the \n).
        whole = sum(1 for e in ends if e - 1 <= at)
        kept = max([0, *(e for e in ends if e <= at), *(e - 1 for e in ends if e - 1 == at)])
        with Session.load(path) as t:
            assert t.message_ids == [t.message_ids[0], *ids[:whole]], at
            assert [m.to_dict() for m in t.messages[1:]] == want_messages[:whole]
            assert len(t.warnings) == (0 if at == kept else 1), (at, t.warnings)
        assert path.read_bytes() == head + written[:kept]


SHORT_WRITE_CHILD = r"""
import json, os, resource, sys
from agent_transcript import Message, Session
path, limit = sys.argv[1], int(sys.argv[2])
import signal
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
s = Session.load(path)
before = os.path.getsize(path)
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
try:
    s.append_messages([Message.user("x" * 3000) for _ in range(10)])
    out = {"error": None}
except OSError as e:
    out = {"error": e.errno}
out["before"], out["after"] = before, os.path.getsize(path)
resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
out["then"] = s.append_messages([Message.user("after")])
s.close()
print(json.dumps(out))
"""


def test_a_short_write_then_an_error_is_cut_back_to_nothing(tmp_path: Path) -> None:
    """RLIMIT_FSIZE lets write(2) write part of the batch, then fails the rest:
    the part is cut back, and the session goes on."""
    path = tmp_path / "t.jsonl"
    with Session.create(path) as s:
        first = s.append_message(Message.user("before"))
    size = path.stat().st_size
    done = python(SHORT_WRITE_CHILD, str(path), str(size + 10_000))
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["error"] is not None
    assert out["after"] == out["before"] == size
    with Session.load(path) as t:
        assert t.message_ids[-2:] == [first, *out["then"]]
        assert [m.content for m in t.messages] == ["before", "after"]


message_text = st.text(st.characters(codec="utf-8"), max_size=40)
message = st.one_of(
    st.builds(Message.user, message_text),
    st.builds(Message.assistant, message_text),
    st.builds(Message.system, message_text),
    st.builds(Message.tool, st.text(min_size=1, max_size=8), message_text),
)
extra = st.one_of(st.none(), st.dictionaries(
    st.sampled_from(["finish-reason", "model", "role", "content", "x"]),
    st.one_of(st.none(), st.integers(-2**63, 2**63), message_text), max_size=3))
items = st.lists(st.one_of(message, st.tuples(message, extra)), max_size=8)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(xs=items)
def test_append_messages_then_reload_equals_append_message_for_each(fast_tmp: Path, xs: list[Any]) -> None:
    one, many = fast_tmp / "one.jsonl", fast_tmp / "many.jsonl"
    for p in (one, many):
        if p.exists():
            p.unlink()
    with Session.create(one) as s:
        for x in xs:
            if isinstance(x, Message):
                s.append_message(x)
            else:
                s.append_message(*x)
        want = (s.messages, [(e.message, e.extra, e.line) for e in s.entries], len(s.events))
    with Session.create(many) as t:
        ids = t.append_messages(xs)
        live = (t.messages, [(e.message, e.extra, e.line) for e in t.entries], len(t.events))
        assert t.message_ids == ids
    assert live == want
    with Session.load(many) as r:
        assert (r.messages, [(e.message, e.extra, e.line) for e in r.entries], len(r.events)) == want
        assert r.message_ids == ids
    strip = [{k: v for k, v in json.loads(x).items() if k not in ("id", "ts")} for x in lines(many)]
    assert strip == [{k: v for k, v in json.loads(x).items() if k not in ("id", "ts")} for x in lines(one)]
    assert os.path.getsize(many) > 0
