"""API basics: Message, the session's life (close, context manager, open,
durability), refusals that write nothing, and the exceptions."""

from __future__ import annotations

import dataclasses
import hashlib
import pickle
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agent_transcript
from agent_transcript import (
    CorruptTranscript,
    Envelope,
    Message,
    Session,
    SessionBroken,
    SessionClosed,
    SessionLocked,
    ToolOperationError,
    TranscriptError,
    UnknownId,
    UnsupportedVersion,
    digest,
)

from ._helpers import freeze, meta, msg, parsed, state, write

PUBLIC = ["Session", "Message", "Envelope", "Entry", "Peek", "PendingToolOperation", "canonical_json", "digest",
          "TranscriptError", "CorruptTranscript", "UnsupportedVersion", "SessionLocked", "SessionClosed",
          "SessionBroken", "UnknownId", "ToolOperationError"]


def test_public_names_are_importable() -> None:
    for name in PUBLIC:
        assert hasattr(agent_transcript, name), name
    from agent_transcript import _core  # noqa: F401  (the native module is there)


# -- Message --------------------------------------------------------------------

def test_message_constructors() -> None:
    assert Message.system("be brief") == Message(role="system", content="be brief", sysprompt=True)
    assert Message.user("hi") == Message(role="user", content="hi")
    assert Message.assistant() == Message(role="assistant", content=None, tool_calls=None)
    calls = [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]
    assert Message.assistant("ok", calls) == Message(role="assistant", content="ok", tool_calls=calls)
    assert Message.assistant(tool_calls=calls).tool_calls == calls
    assert Message.tool("c1", "result") == Message(role="tool", content="result", tool_call_id="c1")
    m = Message(role="user")
    assert (m.content, m.name, m.tool_calls, m.tool_call_id, m.sticky, m.sysprompt, m.depth) == (
        None, None, None, None, False, False, None)


def test_a_messages_defaults_are_its_own_not_its_class_attributes() -> None:
    """CPython 3.12+ does not specialise an instance attribute's load when the
    class has an attribute of that name, which a dataclass makes of each
    default (message.content took 47 ns there, 6 without): the class keeps
    none, and the defaults still hold everywhere a dataclass uses them."""
    import copy
    import pickle

    assert [f.name for f in dataclasses.fields(Message) if f.name in vars(Message)] == []
    m = Message(role="user")
    assert dataclasses.replace(m, content="x") == Message.user("x")
    assert pickle.loads(pickle.dumps(m)) == m == copy.deepcopy(m)
    assert repr(m) == ("Message(role='user', content=None, name=None, tool_calls=None, "
                       "tool_call_id=None, sticky=False, sysprompt=False, depth=None)")
    assert [f.default for f in dataclasses.fields(Message)][1:] == [None, None, None, None, False, False, None]
    assert Message.from_dict({"role": "user"}) == m


def test_message_is_frozen() -> None:
    m = Message.user("x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.content = "y"  # type: ignore[misc]


def test_to_dict_has_role_and_content_always_and_the_rest_when_set() -> None:
    assert Message(role="user").to_dict() == {"role": "user", "content": None}
    assert Message.system("s").to_dict() == {"role": "system", "content": "s", "sysprompt": True}
    assert Message(role="user", content="c", depth=0).to_dict() == {"role": "user", "content": "c", "depth": 0}
    full = Message(role="assistant", content=[{"type": "text", "text": "t"}], name="n",
                   tool_calls=[{"id": "c"}], tool_call_id="c0", sticky=True, sysprompt=True, depth=2)
    assert full.to_dict() == {"role": "assistant", "content": [{"type": "text", "text": "t"}], "name": "n",
                              "tool_calls": [{"id": "c"}], "tool_call_id": "c0", "sticky": True,
                              "sysprompt": True, "depth": 2}
    assert Message(role="user", content="", name="").to_dict() == {"role": "user", "content": "", "name": ""}


def test_from_dict_ignores_extras() -> None:
    d = {"role": "tool", "content": "r", "tool_call_id": "c", "finish-reason": "stop", "usage": {"x": 1}}
    assert Message.from_dict(d) == Message.tool("c", "r")
    assert Message.from_dict({"role": "user"}) == Message(role="user")


@pytest.mark.parametrize(("m", "want"), [
    (Message.user("x"), False),
    (Message(role="user", sticky=True), True),
    (Message(role="user", sysprompt=True), True),
    (Message(role="user", depth=0), True),
    (Message(role="user", depth=3), True),
    (Message.system("s"), True),
])
def test_is_sticky(m: Message, want: bool) -> None:
    assert m.is_sticky is want


messages = st.builds(
    Message,
    role=st.text(min_size=1, max_size=10),
    content=st.none() | st.text(max_size=10) | st.lists(st.dictionaries(st.text(max_size=3), st.text(max_size=3))),
    name=st.none() | st.text(max_size=5),
    tool_calls=st.none() | st.lists(st.dictionaries(st.text(max_size=3), st.integers()), max_size=2),
    tool_call_id=st.none() | st.text(max_size=5),
    sticky=st.booleans(),
    sysprompt=st.booleans(),
    depth=st.none() | st.integers(0, 100),
)


@settings(max_examples=200, deadline=None)
@given(messages, st.dictionaries(st.sampled_from(["finish-reason", "x", "usage"]), st.integers(), max_size=2))
def test_from_dict_inverts_to_dict(m: Message, extra: dict[str, Any]) -> None:
    assert Message.from_dict(m.to_dict()) == m
    assert Message.from_dict({**extra, **m.to_dict()}) == m
    assert m.is_sticky == (m.sticky or m.sysprompt or m.depth is not None)


# -- a session's life ---------------------------------------------------------------

def appends(s: Session, live: str, op: str) -> list[Any]:
    return [
        lambda: s.append_message(Message.user("x")),
        lambda: s.append_message(Message.user("x"), extra={"a": 1}),
        lambda: s.append_grants({}),
        lambda: s.append_compaction("s", live, 1, 1),
        lambda: s.append_elision([(live, "stub")]),
        lambda: s.append_tool_dispatched("c", "t", {}),
        lambda: s.append_tool_settled(op, "completed"),
        lambda: s.append_run_context([("a", "b")], [("k", "v")]),
        lambda: s.resolve_tool_operation(op),
    ]


def test_appending_to_a_closed_session_raises_session_closed(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    s = Session.create(p)
    live = s.append_message(Message.user("a"))
    op = s.append_tool_dispatched("c", "t", {})
    s.close()
    before = freeze(p)
    for call in appends(s, live, op):
        with pytest.raises(SessionClosed):
            call()
    assert state(p) == before
    s.close()          # idempotent
    s.close()
    with Session.load(p) as t:
        assert t.message_ids == [live]


def test_context_manager(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    with Session.create(p) as s:
        assert isinstance(s, Session)
        s.append_message(Message.user("in"))
    with pytest.raises(SessionClosed):
        s.append_message(Message.user("out"))
    with pytest.raises(RuntimeError):
        with Session.load(p) as t:
            raise RuntimeError("boom")
    with pytest.raises(SessionClosed):
        t.append_message(Message.user("out"))
    with Session.load(p) as u:      # the lock went with the exception
        assert [m.content for m in u.messages] == ["in"]
        u.close()                   # closing inside the block is fine too


def test_open_creates_or_loads(tmp_path: Path) -> None:
    p = tmp_path / "new" / "run.jsonl"
    with Session.open(p, {"first": True}) as s:
        assert s.meta == {"first": True}
        a = s.append_message(Message.user("a"))
    with Session.open(p, {"second": True}) as s:
        assert s.meta == {"first": True}, "an existing transcript is loaded, not re-metaed"
        assert s.message_ids == [a]
    assert [e["type"] for e in parsed(p)] == ["session-meta", "message"]
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    with Session.open(empty, {"e": 1}) as s:
        assert s.meta == {"e": 1}
    assert parsed(empty)[0]["payload"] == {"e": 1}


def test_open_of_a_corrupt_file_is_refused_not_overwritten(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    write(p, msg("m1"), meta())
    before = freeze(p)
    with pytest.raises(CorruptTranscript):
        Session.open(p, {"new": 1})
    assert state(p) == before


def test_path_meta_and_fresh_lists(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    with Session.create(str(p), {"m": [1]}) as s:
        assert s.path == p and isinstance(s.path, Path)
        assert s.grants is None
        s.append_message(Message.user("a"))
        got = s.messages
        got.append(Message.user("not in the session"))
        ids = s.message_ids
        ids.clear()
        assert len(s.messages) == 1 and len(s.message_ids) == 1
        assert s.messages is not s.messages
        events = s.events
        assert isinstance(events, Sequence)
        assert len(events) == 2
        assert events[-1] == events[1]
        assert isinstance(events[0], Envelope)
        assert [f.name for f in dataclasses.fields(Envelope)] == ["id", "type", "ts", "v", "payload", "line"]
        with pytest.raises(dataclasses.FrozenInstanceError):
            events[0].id = "x"  # type: ignore[misc]
        assert s.warnings == []


def test_durability_fsync(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    with Session.create(p, durability="fsync") as s:
        a = s.append_message(Message.user("a"))
    with Session.load(p, durability="fsync") as s:
        b = s.append_message(Message.user("b"))
    with Session.open(p, durability="fsync") as s:
        assert s.message_ids == [a, b]
    with Session.open(tmp_path / "other.jsonl", durability="flush") as s:
        s.append_message(Message.user("c"))


@pytest.mark.parametrize("bad", ["FSYNC", "none", "", "sync", None, 1])
def test_a_bad_durability_is_a_value_error(tmp_path: Path, bad: Any) -> None:
    p = tmp_path / "run.jsonl"
    with pytest.raises(ValueError):
        Session.create(p, durability=bad)
    assert not p.exists()
    with pytest.raises(ValueError):
        Session.open(p, durability=bad)
    assert not p.exists()
    Session.create(p).close()
    before = freeze(p)
    with pytest.raises(ValueError):
        Session.load(p, durability=bad)
    with pytest.raises(ValueError):
        Session.open(p, durability=bad)
    assert state(p) == before
    Session.load(p).close()    # no lock was left behind


def deep(n: int) -> Any:
    v: Any = "x"
    for _ in range(n):
        v = [v]
    return v


@pytest.mark.parametrize(("call", "exc"), [
    (lambda s: s.append_message(Message.user("x"), extra={"x": object()}), TypeError),
    (lambda s: s.append_message(Message.user(float("nan"))), ValueError),
    (lambda s: s.append_message(Message.user({1: "non-str key"})), TypeError),
    (lambda s: s.append_message(Message.user(deep(600))), ValueError),
    (lambda s: s.append_grants(float("inf")), ValueError),
    (lambda s: s.append_grants({"a": {2}}), TypeError),
    (lambda s: s.append_tool_dispatched("c", "t", {"a": b"bytes"}), TypeError),
    (lambda s: s.append_run_context([("a", "b")], [("k", object())]), TypeError),
], ids=["extra-object", "nan", "int-key", "too-deep", "inf", "set", "bytes", "fact-object"])
def test_a_refused_append_writes_nothing(tmp_path: Path, call: Any, exc: type[Exception]) -> None:
    p = tmp_path / "run.jsonl"
    with Session.create(p) as s:
        s.append_message(Message.user("before"))
        before = freeze(p)
        before_state = (s.messages, s.message_ids, len(s.events), s.grants)
        with pytest.raises(exc):
            call(s)
        assert state(p) == before
        assert (s.messages, s.message_ids, len(s.events), s.grants) == before_state
        s.append_message(Message.user("after"))
    with Session.load(p) as t:
        assert [m.content for m in t.messages] == ["before", "after"]


def test_a_section_whose_text_has_no_utf8_is_refused_by_name(tmp_path: Path) -> None:
    """A section's digest is of its UTF-8 text, which a lone surrogate has not:
    the section is named, and nothing is written."""
    p = tmp_path / "run.jsonl"
    with Session.create(p) as s:
        before = freeze(p)
        with pytest.raises(ValueError, match="section 'prompt': its text holds a lone surrogate") as e:
            s.append_run_context([("ok", "fine"), ("prompt", "a \ud800 b")], [("k", "v")])
        assert type(e.value) is ValueError and state(p) == before
        s.append_run_context([("prompt", "a b")], [])  # and the session goes on
    with Session.load(p) as t:
        assert t.run_context_section(digest("a b")) == "a b"


def test_create_with_a_meta_that_is_not_json(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    with pytest.raises(TypeError):
        Session.create(p, {"x": object()})
    assert not p.exists() or p.read_bytes() == b""
    with Session.create(p, {"x": 1}) as s:     # and nothing is locked
        assert s.meta == {"x": 1}


def test_digest() -> None:
    assert digest(b"abc") == "sha256:" + hashlib.sha256(b"abc").hexdigest()
    assert digest("é😀") == "sha256:" + hashlib.sha256("é😀".encode()).hexdigest()
    assert digest("") == "sha256:" + hashlib.sha256(b"").hexdigest()


# -- exceptions ---------------------------------------------------------------------

ERRORS = [TranscriptError, CorruptTranscript, UnsupportedVersion, SessionLocked, SessionClosed,
          SessionBroken, UnknownId, ToolOperationError]


@pytest.mark.parametrize("cls", ERRORS, ids=lambda c: c.__name__)
def test_exceptions_are_transcript_errors_and_picklable(cls: type[Exception]) -> None:
    assert issubclass(cls, TranscriptError) and issubclass(cls, Exception)
    e = cls("something went wrong")
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is cls
    assert str(back) == str(e)
    assert back.args == e.args


def raised(call: Any) -> BaseException:
    try:
        call()
    except BaseException as e:
        return e
    raise AssertionError("nothing was raised")


def test_raised_exceptions_survive_pickling(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    write(p, meta(), b"{broken\n", msg("m1"))
    e = raised(lambda: Session.load(p))
    assert type(e) is CorruptTranscript
    assert e.line == 2
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is CorruptTranscript and back.line == 2 and str(back) == str(e)

    write(p, meta(), msg("m1").replace(b'"v":1', b'"v":9'))
    e = raised(lambda: Session.load(p))
    assert type(e) is UnsupportedVersion
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is UnsupportedVersion and back.line == 2 and str(back) == str(e)

    q = tmp_path / "ok.jsonl"
    with Session.create(q) as s:
        for exc_type, call in [
            (SessionLocked, lambda: Session.load(q)),
            (UnknownId, lambda: s.append_compaction("x", "nope", 1, 1)),
            (ToolOperationError, lambda: s.append_tool_settled("nope", "completed")),
        ]:
            e = raised(call)
            assert type(e) is exc_type
            back = pickle.loads(pickle.dumps(e))
            assert type(back) is exc_type and str(back) == str(e)
    e = raised(lambda: s.append_message(Message.user("closed")))
    assert type(e) is SessionClosed
    assert type(pickle.loads(pickle.dumps(e))) is SessionClosed
