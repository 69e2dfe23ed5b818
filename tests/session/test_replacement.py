"""Replacement: ``append_compaction(..., replacement=[...])`` puts those messages
where the summary would have gone, under the ids ``<compaction-id>:<k>``, which
later lines may name; load replays it the same way, and refuses a file where a
replacement message's id is also an envelope's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_transcript import CorruptTranscript, Message, Session, UnknownId

from ._helpers import dumps, freeze, line, meta, msg, parsed, state, write


def reload(s: Session) -> Session:
    """Close ``s``, load its file, and check that load rebuilt what ``s`` had."""
    before = (s.messages, s.message_ids, s.entries)
    s.close()
    t = Session.load(s.path)
    assert (t.messages, t.message_ids, t.entries) == before
    assert t.warnings == []
    return t


def payload_of(s: Session, envelope_id: str) -> Any:
    return next(e["payload"] for e in parsed(s.path) if e["id"] == envelope_id)


def test_an_empty_replacement_keeps_only_the_sticky_messages(tmp_path: Path) -> None:
    s = Session.create(tmp_path / "run.jsonl")
    sys_id = s.append_message(Message.system("sys"))
    u = s.append_message(Message.user("u"))
    last = s.append_message(Message.user("after"))
    k = s.append_compaction("S", u, 10, 1, replacement=[])
    assert s.message_ids == [sys_id, last]
    assert s.messages == [Message.system("sys"), Message.user("after")]
    assert payload_of(s, k) == {"summary": "S", "replaces-through-id": u, "tokens-before": 10,
                                "tokens-after": 1, "fallback": False, "replacement": []}
    reload(s).close()


def test_without_a_replacement_a_compaction_replays_as_before(tmp_path: Path) -> None:
    s = Session.create(tmp_path / "run.jsonl")
    u = s.append_message(Message.user("u"))
    k = s.append_compaction("S", u, 10, 1, replacement=None)
    assert "replacement" not in payload_of(s, k)
    assert s.message_ids == [k] and s.messages == [Message.user("S")]
    reload(s).close()


def test_replacement_messages_go_where_the_summary_would_with_their_extras(tmp_path: Path) -> None:
    s = Session.create(tmp_path / "run.jsonl")
    sys_id = s.append_message(Message.system("sys"))
    a = s.append_message(Message.user("a"))
    b = s.append_message(Message.assistant("b"))
    c = s.append_message(Message.user("c"))
    item = {"type": "message", "id": "msg_1", "content": [{"type": "output_text", "text": "r1"}]}
    k = s.append_compaction("S", b, 100, 10, True, replacement=[
        Message.user("r0"),
        (Message.assistant("r1"), {"item": item, "role": "not me", "content": "nor me"}),
        (Message.user("r2"), None),
    ])
    assert s.message_ids == [sys_id, f"{k}:0", f"{k}:1", f"{k}:2", c]
    assert s.messages == [Message.system("sys"), Message.user("r0"), Message.assistant("r1"),
                          Message.user("r2"), Message.user("c")]
    # Each is written as a message line's payload is: a message key wins over an extra.
    assert payload_of(s, k)["replacement"] == [
        {"role": "user", "content": "r0"},
        {"role": "assistant", "content": "r1", "item": item},
        {"role": "user", "content": "r2"},
    ]
    assert [e.extra for e in s.entries] == [{}, {}, {"item": item}, {}, {}]
    assert k not in s.message_ids, "the summary is recorded, not replayed"
    assert payload_of(s, k)["summary"] == "S"
    del a
    reload(s).close()


def test_sticky_messages_before_the_cut_are_kept_and_sticky_replacement_messages_too(tmp_path: Path) -> None:
    s = Session.create(tmp_path / "run.jsonl")
    sys_id = s.append_message(Message.system("sys"))
    u = s.append_message(Message.user("u"))
    pin = s.append_message(Message(role="user", content="pinned", sticky=True))
    deep = s.append_message(Message(role="user", content="deep", depth=2))
    a = s.append_message(Message.assistant("a"))
    k = s.append_compaction("S", a, 9, 3, replacement=[
        Message(role="user", content="kept", sticky=True), Message.user("dropped")])
    assert s.message_ids == [sys_id, pin, deep, f"{k}:0", f"{k}:1"]
    k2 = s.append_compaction("S2", f"{k}:1", 9, 3)
    assert s.message_ids == [sys_id, pin, deep, f"{k}:0", k2]
    del u
    reload(s).close()


def test_later_elision_compaction_and_rewind_name_replacement_messages(tmp_path: Path) -> None:
    s = Session.create(tmp_path / "run.jsonl")
    u = s.append_message(Message.user("u"))
    k = s.append_compaction("S", u, 9, 3, replacement=[Message.user(f"r{i}") for i in range(4)])
    s.append_elision([(f"{k}:1", "[r1 gone]"), (f"{k}:3", "[r3 gone]")])
    assert [m.content for m in s.messages] == ["r0", "[r1 gone]", "r2", "[r3 gone]"]
    k2 = s.append_compaction("S2", f"{k}:1", 9, 3, replacement=[Message.assistant("x")])
    assert s.message_ids == [f"{k2}:0", f"{k}:2", f"{k}:3"]
    s.append_rewind(f"{k}:2")
    assert s.message_ids == [f"{k2}:0", f"{k}:2"]
    k3 = s.append_compaction("S3", f"{k2}:0", 1, 1)
    assert s.message_ids == [k3, f"{k}:2"]
    for gone in (f"{k}:0", f"{k}:1", f"{k}:3", f"{k}:4", f"{k}:01", f"{k2}:0", k, k2):
        with pytest.raises(UnknownId):
            s.append_elision([(gone, "x")])
    reload(s).close()


@pytest.mark.parametrize("bad", [
    Message.user("x"), "text", {"role": "user"}, [Message.user("x"), "text"],
    [(Message.user("x"), {"a": 1}, None)], [(Message.user("x"), "extra")], [("x", {})], [None],
])
def test_a_bad_replacement_raises_type_error_and_writes_nothing(tmp_path: Path, bad: Any) -> None:
    with Session.create(tmp_path / "run.jsonl") as s:
        u = s.append_message(Message.user("u"))
        frozen = freeze(s.path)
        with pytest.raises(TypeError):
            s.append_compaction("S", u, 1, 1, replacement=bad)
        assert state(s.path) == frozen and s.message_ids == [u]


def test_a_replacement_naming_a_message_that_is_not_live_writes_nothing(tmp_path: Path) -> None:
    with Session.create(tmp_path / "run.jsonl") as s:
        u = s.append_message(Message.user("u"))
        frozen = freeze(s.path)
        with pytest.raises(UnknownId):
            s.append_compaction("S", "nope", 1, 1, replacement=[Message.user("r")])
        assert state(s.path) == frozen and s.message_ids == [u]


def replacing(id: str, through: str, parts: list[Any]) -> bytes:
    return line(id, "compaction", {"summary": "S", "replaces-through-id": through, "tokens-before": 1,
                                   "tokens-after": 1, "fallback": False, "replacement": parts})


def test_load_replays_a_hand_written_replacement(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    write(p, meta(), msg("a", "system", "s", sysprompt=True), msg("b"),
          replacing("c", "b", [{"role": "user", "content": "r0", "x": 1},
                               {"content": "r1", "role": "assistant", "tool_calls": [], "name": "n"}]),
          line("e", "elision", {"items": [{"id": "c:1", "stub": "[stub]"}]}))
    with Session.load(p) as s:
        assert s.message_ids == ["a", "c:0", "c:1"]
        assert s.messages[1:] == [Message.user("r0"),
                                  Message(role="assistant", content="[stub]", tool_calls=[], name="n")]
        assert [(e.line, e.elided, e.extra) for e in s.entries] == [(2, False, {}), (4, False, {"x": 1}),
                                                                    (4, True, {})]


@pytest.mark.parametrize("order", ["envelope first", "replacement first"])
def test_an_id_clash_between_an_envelope_and_a_replacement_message_is_corrupt(tmp_path: Path, order: str) -> None:
    p = tmp_path / "run.jsonl"
    if order == "envelope first":
        write(p, meta(), msg("a"), msg("c:1"), replacing("c", "a", [{"role": "user"}, {"role": "user"}]))
        at = 4
    else:
        write(p, meta(), msg("a"), replacing("c", "a", [{"role": "user"}, {"role": "user"}]), msg("c:1"))
        at = 4
    frozen = freeze(p)
    with pytest.raises(CorruptTranscript) as e:
        Session.load(p)
    assert e.value.line == at
    assert state(p) == frozen


def test_ids_that_only_look_like_replacement_ids_are_ordinary(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    write(p, meta(), msg("a"), replacing("c", "a", [{"role": "user"}]), msg("c:01"), msg("c:1"),
          msg("c:-0"), msg("c:+0"), msg("c:"), msg("d:0"))
    with Session.load(p) as s:
        assert s.message_ids == ["c:0", "c:01", "c:1", "c:-0", "c:+0", "c:", "d:0"]


@pytest.mark.parametrize("replacement", [None, {}, "r", [1], [{"content": "no role"}], [{"role": 2}],
                                         [{"role": "user"}, []]])
def test_load_refuses_a_replacement_that_is_not_a_list_of_messages(tmp_path: Path, replacement: Any) -> None:
    p = tmp_path / "run.jsonl"
    write(p, meta(), msg("a"), replacing("c", "a", replacement))
    frozen = freeze(p)
    with pytest.raises(CorruptTranscript) as e:
        Session.load(p)
    assert e.value.line == 3
    assert state(p) == frozen


def test_a_replacement_line_is_one_canonical_line(tmp_path: Path) -> None:
    with Session.create(tmp_path / "run.jsonl") as s:
        u = s.append_message(Message.user("u"))
        k = s.append_compaction("S", u, 1, 1, replacement=[(Message.user("ü 🚀"), {"z": [1.5, None]})])
        raw = s.path.read_bytes().splitlines()[-1]
        env = parsed(s.path)[-1]
        assert raw.decode() == dumps(env) and env["id"] == k
