"""``Session.entries``: each live message with its id, its extras, the line it
came from and whether it was elided; parallel to ``messages`` after every kind
of record, and the same after a reload."""

from __future__ import annotations

import dataclasses
import os
import typing
from pathlib import Path

import pytest

import agent_transcript
from agent_transcript import Entry, Message, Session, SessionClosed

from ._helpers import line, meta, msg, write


def check_parallel(s: Session) -> None:
    entries = s.entries
    assert [e.message for e in entries] == s.messages
    assert [e.id for e in entries] == s.message_ids
    lines = {e.id: e.line for e in s.events}
    for e in entries:
        owner = e.id if e.id in lines else e.id.rsplit(":", 1)[0]
        assert e.line == lines[owner], e


def test_entry_is_an_exported_frozen_typed_dataclass() -> None:
    assert agent_transcript.Entry is Entry and "Entry" in agent_transcript.__all__
    assert [f.name for f in dataclasses.fields(Entry)] == ["id", "message", "extra", "line", "elided"]
    hints = typing.get_type_hints(Entry)
    assert hints == {"id": str, "message": Message, "extra": dict[str, typing.Any], "line": int, "elided": bool}
    e = Entry("a", Message.user("x"), {}, 2, False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        e.id = "b"  # type: ignore[misc]
    assert Entry.__doc__ and "extra" in Entry.__doc__


def test_entries_follow_messages_through_every_record(tmp_path: Path) -> None:
    s = Session.create(tmp_path / "run.jsonl")
    check_parallel(s)
    assert s.entries == []
    sys_id = s.append_message(Message.system("sys"))
    u = s.append_message(Message.user("u"), {"finish-reason": "stop"})
    a = s.append_message(Message.assistant("a"))
    check_parallel(s)
    k = s.append_compaction("S", u, 9, 2)
    check_parallel(s)
    s.append_elision([(k, "[S]"), (a, "[a]")])
    check_parallel(s)
    k2 = s.append_compaction("S2", k, 9, 2, replacement=[(Message.user("r"), {"item": 1})])
    check_parallel(s)
    s.append_rewind(f"{k2}:0")
    check_parallel(s)
    assert [e.id for e in s.entries] == [sys_id, f"{k2}:0"]
    s.close()
    check_parallel(s)  # reading still works on a closed session


def test_extras_are_what_the_append_wrote_beside_the_message(tmp_path: Path) -> None:
    with Session.create(tmp_path / "run.jsonl") as s:
        item = {"type": "function_call_output", "call_id": "c1", "output": "ok", "n": [1, 2.5, None]}
        t = s.append_message(Message.tool("c1", "ok"), {"item": item, "role": "ignored", "sticky": True})
        plain = s.append_message(Message.user("plain"))
        e_t, e_plain = s.entries
        assert (e_t.id, e_t.extra, e_t.message) == (t, {"item": item}, Message.tool("c1", "ok"))
        assert (e_plain.id, e_plain.extra) == (plain, {})
        k = s.append_compaction("S", plain, 9, 2)
        assert s.entries[0] == Entry(k, Message.user("S"), {}, 4, False), "a summary has no extras"
        assert e_t.extra is not s.entries[0].extra
        s.entries[0].extra["mutated"] = True
        assert s.entries[0].extra == {}, "a fresh list, and fresh dicts, each call"


def test_lines_are_the_envelopes_lines_blank_lines_counted(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    write(p, meta(), b"\n", msg("a"), b"  \r\n", msg("b"),
          line("c", "compaction", {"summary": "S", "replaces-through-id": "a", "tokens-before": 1,
                                   "tokens-after": 1, "fallback": False}),
          b"\n", line("d", "compaction", {"summary": "S", "replaces-through-id": "b", "tokens-before": 1,
                                           "tokens-after": 1, "fallback": False,
                                           "replacement": [{"role": "user"}, {"role": "user"}]}),
          msg("e"))
    with Session.load(p) as s:
        assert [(e.id, e.line) for e in s.entries] == [("d:0", 8), ("d:1", 8), ("e", 9)]
        s.append_message(Message.user("f"))
        assert s.entries[-1].line == 10


def test_elided_says_an_elision_replaced_the_content_and_the_extras_stay(tmp_path: Path) -> None:
    s = Session.create(tmp_path / "run.jsonl")
    t = s.append_message(Message.tool("c1", "a long result"), {"item": {"id": "x"}})
    u = s.append_message(Message.user("u"))
    s.append_elision([(t, "[elided]")])
    e_t, e_u = s.entries
    assert (e_t.elided, e_t.message, e_t.extra) == (True, Message.tool("c1", "[elided]"), {"item": {"id": "x"}})
    assert e_t.line == 2, "the message's own line, not the elision's"
    assert e_u.elided is False
    s.append_elision([(t, "[shorter]")])
    assert s.entries[0].message.content == "[shorter]" and s.entries[0].elided
    del u
    s.close()
    with Session.load(s.path) as again:
        assert again.entries == s.entries


def test_entries_after_reload_equal_the_writers(tmp_path: Path) -> None:
    s = Session.create(tmp_path / "run.jsonl")
    s.append_message(Message.system("sys"))
    ids = [s.append_message(Message.user(f"u{i}"), {"i": i}) for i in range(5)]
    k = s.append_compaction("S", ids[1], 9, 2, replacement=[(Message.user("r0"), {"r": 0}), Message.user("r1")])
    s.append_elision([(f"{k}:1", "[r1]"), (ids[3], "[u3]")])
    s.append_rewind(ids[3])
    s.append_message(Message.assistant("a"), {"finish-reason": "stop"})
    before = s.entries
    s.close()
    with Session.load(s.path) as t:
        assert t.entries == before
        check_parallel(t)


def test_entries_and_messages_are_what_their_constructors_make(tmp_path: Path) -> None:
    # entries and Message.from_dict fill the frozen dataclasses' fields without
    # their __init__: the objects must be the same in every way a caller sees.
    p = tmp_path / "t.jsonl"
    with Session.create(p) as s:
        s.append_message(Message.user("hi"), extra={"item": {"k": 1}})
        s.append_message(Message(role="assistant", content=None, tool_calls=[{"id": "c"}], sticky=True))
    s = Session.load(p)
    for e in s.entries:
        m = e.message
        made = Message(**{f.name: getattr(m, f.name) for f in dataclasses.fields(Message)})
        assert m == made and repr(m) == repr(made)
        assert list(vars(m)) == [f.name for f in dataclasses.fields(Message)]
        again = Entry(id=e.id, message=m, extra=e.extra, line=e.line, elided=e.elided)
        assert e == again and repr(e) == repr(again)
        assert list(vars(e)) == [f.name for f in dataclasses.fields(Entry)]
        with pytest.raises(dataclasses.FrozenInstanceError):
            m.role = "x"  # type: ignore[misc]
        with pytest.raises(dataclasses.FrozenInstanceError):
            e.line = 0  # type: ignore[misc]
    assert s.entries[0].extra == {"item": {"k": 1}}
    s.close()


def test_a_message_subclass_is_made_by_its_own_init() -> None:
    made: list[str] = []

    @dataclasses.dataclass(frozen=True)
    class Tagged(Message):
        def __post_init__(self) -> None:
            made.append(self.role)

    m = Tagged.from_dict({"role": "user", "content": "x", "other": 1})
    assert type(m) is Tagged and m.content == "x" and made == ["user"]


def test_a_closed_session_holds_no_descriptor_and_reads_its_file_again(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    s = Session.create(path)
    a = s.append_message(Message.user("a"), {"k": 1})

    def on_file() -> list[str]:
        return [n for n in os.listdir("/proc/self/fd") if os.path.realpath(f"/proc/self/fd/{n}") == str(path)]

    assert on_file() != []  # the assertion below could fail
    s.close()
    assert on_file() == []  # nothing kept until the session is collected
    assert [e.id for e in s.entries] == [a] and s.entries[0].extra == {"k": 1}
    assert on_file() == []  # the read let go of what it opened
    path.rename(tmp_path / "elsewhere.jsonl")
    path.write_bytes(b"")  # another file under the name: never read as this one
    with pytest.raises(SessionClosed, match="moved, replaced or deleted"):
        s.messages
